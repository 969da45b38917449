"""Benchmark (not a test): edge list -> .gcsr at soc-LiveJournal1 size, and loading the .gcsr.

Generates a 4,847,571-node / 68,993,773-arc preferential-attachment edge list (plain text, as
SNAP ships it after decompression), then times ``gpucore preprocess`` in a child process (wall
time, peak resident memory) and ``load_graph`` (memory-map open; then a full read of every
array). Writes JSON and Markdown to the output folder.

    python benchmarks/bench_preprocess.py OUTDIR [--nodes N --edges M] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_common import git_commit  # noqa: E402


_CHILD = (
    "import resource, sys\n"
    "from gpucore.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "print('PEAK_RSS_KIB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def _timed_child(args: list[str]) -> tuple[float, int, str]:
    """Run ``gpucore ARGS`` in a child; return (wall seconds, the child's own peak RSS in bytes, stdout)."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    peak_kib = int(done.stderr.rsplit("PEAK_RSS_KIB", 1)[1].split()[0])
    return wall, peak_kib * 1024, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--nodes", type=int, default=4_847_571)
    parser.add_argument("--edges", type=int, default=68_993_773)
    parser.add_argument("--workdir", default=None, help="where the big temporary files go")
    args = parser.parse_args()
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        text, gcsr = Path(tmp) / "lj-size.txt", Path(tmp) / "lj-size.gcsr"
        gen_wall, _, _ = _timed_child(["generate", "pa", "--nodes", str(args.nodes), "--edges",
                                                 str(args.edges), "--seed", "1", "-o", str(text)])
        # warm Numba's cache on a tiny input so compilation is not counted as preprocessing
        small = Path(tmp) / "small.txt"
        small.write_text("1 2\n2 3\n")
        _timed_child(["preprocess", str(small), "-o", str(Path(tmp) / "small.gcsr")])
        wall, peak, out = _timed_child(["preprocess", str(text), "-o", str(gcsr)])
        stats = json.loads(out)
        load = subprocess.run([sys.executable, "-c", _LOAD_SNIPPET, str(gcsr)], capture_output=True, text=True,
                              check=True)
        load_times = json.loads(load.stdout)
        record = {
            "benchmark": "preprocess",
            "date": datetime.date.today().isoformat(),
            "commit": git_commit(),
            "machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()},
            "input": {"nodes": args.nodes, "edges_requested": args.edges, "text_bytes": text.stat().st_size},
            "generate_seconds": round(gen_wall, 2),
            "preprocess_seconds": round(wall, 2),
            "preprocess_phases": stats["seconds"],
            "preprocess_peak_rss_bytes": peak,
            "gcsr_bytes": gcsr.stat().st_size,
            "n": stats["n"],
            "m": stats["m"],
            **load_times,
        }
    (outdir / "bench-preprocess.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


_LOAD_SNIPPET = """
import json, sys, time
t = time.perf_counter()
from gpucore.graph import load_graph
t_import = time.perf_counter() - t
t = time.perf_counter()
g = load_graph(sys.argv[1])
t_open = time.perf_counter() - t
t = time.perf_counter()
total = 0
for name in ("out_indptr", "out_dst", "out_prob", "in_indptr", "in_src", "in_eid", "in_prob", "cost", "original_id"):
    total += int(np.array(getattr(g, name), copy=True).nbytes)
t_read = time.perf_counter() - t
print(json.dumps({"load_open_seconds": round(t_open, 4), "load_full_read_seconds": round(t_read, 3),
                  "load_bytes": total}))
"""


if __name__ == "__main__":
    sys.exit(main())
