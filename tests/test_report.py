"""The Snakemake report, opened in headless Chromium: every figure shows (decoded, within the report's
width), every table shows once as an HTML table, and the configuration is in it.

Chromium is driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``: JSON
messages ending in a NUL byte on file descriptors 3 and 4), so no browser-automation package is
needed. The test skips, saying why, where ``chromium`` is not installed (``apt-get install chromium``).
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.test_workflow import SNAKEMAKE, snakemake, workdir, write_yaml

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"),
    pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed beside this Python"),
]
VIEWPORT = (1920, 1080)


class Browser:
    """A headless Chromium page spoken to through the DevTools protocol on a pipe."""

    def __init__(self, profile: Path):
        to_chrome, self._write = os.pipe()
        self._read, from_chrome = os.pipe()

        def fds():  # in the child: Chromium reads the protocol on descriptor 3 and writes it on 4, nothing else open
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome, from_chrome)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)
            os.closerange(5, resource.getrlimit(resource.RLIMIT_NOFILE)[0])

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", f"--user-data-dir={profile}", f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}",
             "about:blank"],
            close_fds=False, preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer, self._next, self.session = b"", 0, None

    def call(self, method: str, params: dict | None = None, session: bool = True, timeout: float = 60) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" not in self._buffer:
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
        raise TimeoutError(method)

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": url}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", {"width": VIEWPORT[0], "height": VIEWPORT[1],
                                                         "deviceScaleFactor": 1, "mobile": False})

    def js(self, expression: str):
        """The value of a JavaScript expression (promises awaited)."""
        reply = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression[:80]}...: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self.js(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(expression)
            time.sleep(0.2)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self._write)
        os.close(self._read)


#: shows one result of the report the way clicking it does, then describes what the page displays
SHOW = """
(async (path) => {
  const uri = results[path].data_uri;
  new ToggleViewManager(app).handleSelectedResult(path);
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const img = document.querySelector("#app img[src^='data:image/png']");
    const frame = document.querySelector("#app iframe");
    if (img && img.src === uri && img.complete) {
      const pane = img.closest(".grow");
      return {kind: "img", width: img.naturalWidth, height: img.naturalHeight, pane: pane.clientWidth};
    }
    if (frame && frame.src === uri) {
      const text = await (await fetch(frame.src)).text();
      const doc = new DOMParser().parseFromString(text, "text/html");
      return {kind: "html", tables: doc.querySelectorAll("table").length,
              rows: doc.querySelectorAll("tr").length, pre: doc.querySelector("pre")?.textContent || ""};
    }
  }
  return {kind: "nothing"};
})
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A small run of the workflow (one generated graph, AMCSS under IC and LT, IM) and its report."""
    tmp = tmp_path_factory.mktemp("report")
    wd = workdir(tmp)
    config = {
        "output": "results/small",
        "realizations": 2,
        "verify": {"runs": 200},
        "datasets": {"pa300": {"generate": {"kind": "pa", "nodes": 300, "edges": 2400, "seed": 4}}},
        "experiments": [
            {"kind": "amcss", "dataset": "pa300", "model": "IC", "batch": 4, "eta": [20, 40],
             "algorithms": ["merit", "pasti"]},
            {"kind": "amcss", "dataset": "pa300", "model": "LT", "batch": 4, "eta": [30], "algorithms": ["merit"]},
            {"kind": "im", "dataset": "pa300", "model": "IC", "k": [3], "algorithms": ["imm"]},
        ],
    }
    configfile = write_yaml(tmp / "small.yaml", config)
    snakemake(wd, "--cores", "2", "--configfile", configfile)
    snakemake(wd, "--configfile", configfile, "--report", "small-report.html")
    return wd, wd / "small-report.html", config


def test_report_shows_every_figure_table_and_the_configuration(report, tmp_path):
    wd, html, config = report
    tree = wd / config["output"]
    figures = sorted(p.relative_to(wd).as_posix() for p in (tree / "figures").glob("*.png"))
    tables = sorted(p.relative_to(wd).as_posix() for p in (tree / "tables").glob("*.html"))
    assert len(figures) == 7 and len(tables) == 3  # cost/time/breakdown x IC, LT + verification; 3 tables
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(html.as_uri())
        browser.wait_for("typeof app !== 'undefined' && typeof results !== 'undefined'")
        listed = browser.js("Object.keys(results)")
        categories = browser.js("categories")
        # every figure and every table once (as HTML: no CSV, Markdown or LaTeX copy), the configuration
        assert sorted(p for p in listed if p.endswith(".png")) == figures
        assert sorted(p for p in listed if "/tables/" in p) == tables
        assert set(listed) == set(figures) | set(tables) | {f"{config['output']}/config.html"}
        assert "Configuration" in categories
        for path in figures:
            shown = browser.js(f"{SHOW}({json.dumps(path)})")
            assert shown["kind"] == "img" and shown["width"] > 200, (path, shown)
            assert shown["width"] <= shown["pane"], (path, shown)  # readable at the report's width
        for path in tables:
            shown = browser.js(f"{SHOW}({json.dumps(path)})")
            assert shown["kind"] == "html" and shown["tables"] == 1 and shown["rows"] >= 2, (path, shown)
        shown = browser.js(f"{SHOW}({json.dumps(config['output'] + '/config.html')})")
        merged = yaml.safe_load(shown["pre"])
        assert merged["output"] == config["output"] and merged["realizations"] == 2
        assert merged["experiments"] == config["experiments"] and merged["registry"] == "config/datasets.yaml"
        intro = browser.js("workflow_desc")
        assert "Configuration" in intro and f"{config['output']}/tables/" in intro
    finally:
        browser.close()


def test_configuration_file_beside_the_results(report):
    wd, _html, config = report
    merged = yaml.safe_load((wd / config["output"] / "config.yaml").read_text())
    assert merged["verify"]["runs"] == 200 and merged["download"]["retries"] == 5  # a default of the schema
