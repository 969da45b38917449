"""Peak resident memory of one CPU IMM run against its projection (run by tests/test_im_imm.py).

``python tests/im_memory_probe.py NODES P EPS`` prints JSON: ``peak`` (bytes the process's resident
high-water mark rose during the run, after a warm-up run and a reset of the mark through
/proc/self/clear_refs) and ``projected`` (the result's ``memory_projected``).
"""

import json
import sys

import numpy as np

from gpucore.graph import from_arcs
from gpucore.im import imm


def status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def main(nodes: int, p: float, eps: float) -> None:
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, nodes, 8 * nodes), rng.integers(0, nodes, 8 * nodes)
    keep = src != dst
    key = np.unique(src[keep] * nodes + dst[keep])
    g = from_arcs(nodes, key // nodes, key % nodes, p)
    imm(g, 2, 0.9, "IC", backend="cpu")  # compile and load every kernel first
    base = status("VmRSS:")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM to the current resident size
    res = imm(g, 10, eps, "IC", backend="cpu")
    print(json.dumps({"peak": status("VmHWM:") - base, "projected": res["memory_projected"],
                      "elements": res["rr_elements"], "theta": res["theta"]}))


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]))
