"""``benchmarks/gim_peer.py`` and the gIM column of ``benchmarks/bench_difuser.py``, without gIM: a
stand-in executable reads gIM's text input the way gIM does (``u v p`` triples, vertex count = largest
id + 1), solves it with our CPU IMM and prints gIM's lines, so the bench's gIM row must repeat its
IMM row. That the probabilities read back bit for bit is checked on the text itself (a rounding that
flips no coin would not show in the answers)."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from benchmarks import bench_difuser, gim_peer
from gpucore.graph import from_arcs

REPO = Path(__file__).resolve().parents[1]

FAKE = textwrap.dedent("""\
    import sys
    import numpy as np
    import pandas as pd
    from gpucore.graph import from_arcs
    from gpucore.im import imm
    path, k, eps, model = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    if k > 1000:
        print("terminate called after throwing an instance of 'thrust::system::system_error'")
        print("  what():  cudaMalloc: out of memory", file=sys.stderr)
        sys.exit(134)
    t = pd.read_csv(path, sep=" ", header=None).to_numpy()
    g = from_arcs(int(t[:, :2].max()) + 1, t[:, 0].astype(np.int64), t[:, 1].astype(np.int64),
                  t[:, 2].astype(np.float32))
    res = imm(g, k, eps, "IC" if model else "LT", seed=0, backend="cpu")
    print(f"K = {k}, eps =  {eps}, model = {'IC' if model else 'LT'}")
    print(f"# of required RR sets: {res['theta']}")
    print(f"Time: {res['seconds'] * 1000:.3f} ms")
    print(res["estimated_spread"])
    print("List of nodes in the seed set: " + " ".join(str(v) for v in res["seed_ids"]))
    """)


@pytest.fixture()
def fake_gim(tmp_path):
    script = tmp_path / "fake_gim.py"
    script.write_text(FAKE)
    exe = tmp_path / "gIM"
    exe.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} {script} \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_input_reads_back_bit_for_bit(tmp_path):
    rng = np.random.default_rng(5)
    n = 300
    a = np.unique(rng.integers(0, n * n, 3000))
    src, dst = a // n, a % n
    keep = src != dst
    edge = [0.005, 0.01, 0.1, 1.0, 0.0, 1e-7, 3.4e-9, 1.5e-45, 0.99999994, 0.049999997, 9.9999999e-5, 1e-10]
    prob = np.concatenate([edge, rng.random(int(keep.sum()) // 2 - len(edge)),
                           10.0 ** rng.uniform(-12, 0, int(keep.sum()) - int(keep.sum()) // 2)]).astype(np.float32)
    g = from_arcs(n, src[keep], dst[keep], prob)
    path = tmp_path / "g.txt"
    assert gim_peer.write_input(g, path) == g.m
    rows = [line.split(" ") for line in path.read_text().splitlines()]
    got_src = np.array([int(r[0]) for r in rows])
    assert np.array_equal(got_src, np.repeat(np.arange(n), np.diff(g.out_indptr)))
    assert np.array_equal(np.array([int(r[1]) for r in rows]), g.out_dst)
    assert np.array_equal(np.array([np.float32(r[2]) for r in rows]), g.out_prob)


def test_parse_output_success_and_failures():
    ok = gim_peer.parse_output("K = 5, eps =  0.5, model = IC\nEstimating OPT\nx: 1 ,ci: 500\nx: 2 ,ci: 1000\n"
                               "# of required RR sets: 1234\nTime: 12.5 ms\n"
                               "321.25\nList of nodes in the seed set: 3 1 4 0 2\n")
    assert ok == {"seconds": 0.0125, "estimated_spread": 321.25, "theta": 1234, "seed_ids": [3, 1, 4, 0, 2],
                  "lower_bound_search": [[1, 500], [2, 1000]]}
    oom = gim_peer.parse_output("Estimating OPT\nterminate called ...\n  what():  cudaMalloc: out of memory\n")
    assert oom["failed"] == "out of memory" and oom["tail"][-1].endswith("out of memory")
    assert gim_peer.parse_output("Reading the input file\n")["failed"] == "no timing line"


def test_run_records_exit_codes_and_time_limits(tmp_path, fake_gim):
    g = from_arcs(4, [0, 1, 2], [1, 2, 3], 0.5)
    path = tmp_path / "g.txt"
    gim_peer.write_input(g, path)
    rec = gim_peer.run(fake_gim, path, 2000, 0.5, "IC", timeout=120)
    assert rec["failed"] == "out of memory (exit 134)" and rec["wall"] > 0
    slow = tmp_path / "slow"
    slow.write_text("#!/bin/sh\necho Estimating OPT\nsleep 30\n")
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    rec = gim_peer.run(slow, path, 2, 0.5, "IC", timeout=1)
    assert rec["failed"] == "time limit 1s"


def test_bench_difuser_gim_column_equals_imm_through_the_text(tmp_path, fake_gim):
    """The bench's gIM row solves the written text; with the stand-in it must give IMM's own answer."""
    out = tmp_path / "out"
    env_keep = os.environ.get("GPUCORE_PROGRESS")
    rc = bench_difuser.main([str(out), "--backend", "cpu", "--graphs", "custom", "--custom", "3000,12000",
                             "--settings", "p1,n005", "--parts", "imm", "--samplings", "keyed", "--k", "5",
                             "--oracle-runs", "200", "--gim", str(fake_gim), "--budget", "600"])
    assert rc == 0 and os.environ.get("GPUCORE_PROGRESS") == (env_keep or "0")
    rep = json.loads((out / "bench_difuser.json").read_text())
    cells = [c for c in rep["cells"] if c.get("setting")]
    assert [c["setting"] for c in cells] == ["p1", "n005"]
    for c in cells:
        assert "failed" not in c["gim"], c["gim"]
        assert c["gim"]["estimated_spread"] == pytest.approx(c["imm"]["estimated_spread"], rel=1e-12)
        assert c["gim"]["oracle"] == c["imm"]["oracle"]  # same seeds, same oracle worlds
        assert c["imm"]["score_vs_gim"] == 1.0
    assert not (out / "gim-input.txt").exists()
    md = (out / "bench_difuser.md").read_text()
    assert md.count("| gim |") == 2 and "speedup vs gIM" in md


def test_bench_difuser_rmat_stand_ins(tmp_path):
    """--generator rmat: the cells run on R-MAT graphs (far larger hubs than PA's of the same size), and say so."""
    pa = bench_difuser.standin_csr(20_000, 80_000, True, "pa")
    rmat = bench_difuser.standin_csr(20_000, 80_000, True, "rmat")
    assert np.diff(rmat.in_indptr).max() > 4 * np.diff(pa.in_indptr).max()
    out = tmp_path / "out"
    rc = bench_difuser.main([str(out), "--backend", "cpu", "--graphs", "custom", "--custom", "3000,12000,undirected",
                             "--generator", "rmat", "--settings", "p1", "--parts", "imm", "--k", "5",
                             "--oracle-runs", "100", "--budget", "600"])
    assert rc == 0
    rep = json.loads((out / "bench_difuser.json").read_text())
    assert rep["parameters"]["generator"] == "rmat"
    (cell,) = [c for c in rep["cells"] if c.get("setting")]
    assert cell["title"].startswith("R-MAT") and cell["imm"]["oracle"] > 0
    assert "| R-MAT 3,000 / 12,000 |" in (out / "bench_difuser.md").read_text()


GIM_IM_CU = """    size_t heap_size = 1024ULL*1024UL*128UL;
    cudaDeviceSetLimit(cudaLimitMallocHeapSize, heap_size);
    d_rr_sets = thrust::device_vector<uint32_t>((l_free/sizeof(uint32_t)/10)*9, 0);
"""


def test_gim_patch_changes_the_three_constants(tmp_path):
    """benchmarks/gim_patch.sh on a tree with gIM's lines: each is replaced; on other sources it stops, leaving
    nothing behind."""
    import subprocess

    src = tmp_path / "gim"
    src.mkdir()
    (src / "IM.cu").write_text("// gIM\n" + GIM_IM_CU)
    (src / "IM.h").write_text("#define MAX_NUMBER_OF_RR_SETS 30000000\n")
    dst = tmp_path / "patched"
    run = subprocess.run(["bash", str(REPO / "benchmarks" / "gim_patch.sh"), str(src), str(dst), "8", "1000"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    cu, h = (dst / "IM.cu").read_text(), (dst / "IM.h").read_text()
    assert "size_t heap_size = 8ULL*1024ULL*1024ULL*1024ULL;" in cu
    assert "(l_free/sizeof(uint32_t)/10)*9 < 0xF0000000ULL ? (l_free/sizeof(uint32_t)/10)*9 : 0xF0000000ULL" in cu
    assert "#define MAX_NUMBER_OF_RR_SETS 1000 " in h
    assert (src / "IM.cu").read_text() == "// gIM\n" + GIM_IM_CU  # the source is left as it was
    (src / "IM.h").write_text("#define MAX_NUMBER_OF_RR_SETS 40000000\n")  # not the version it knows
    other = tmp_path / "other"
    run = subprocess.run(["bash", str(REPO / "benchmarks" / "gim_patch.sh"), str(src), str(other)],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "MAX_NUMBER_OF_RR_SETS not found" in run.stderr and not other.exists()
