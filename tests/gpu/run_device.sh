#!/usr/bin/env bash
# The GPU machine's entry point, run as is from the repository root (no network there):
#   bash tests/gpu/run_device.sh STAGE [STAGE ...]      logs and results under $OUT
# Stages: info, tests-amcss and tests-other (pytest -m gpu, in two commands), bench-oracle, bench-im, bench-amcss, bench-merit,
# bench-fuseim (BENCH_FUSEIM_ARGS, e.g. "--graphs BS,Go --budget 540"), bench-sds (BENCH_SDS_ARGS),
# bench-difuser (BENCH_DIFUSER_ARGS, GIM=gIM's executable), study-difuser (STUDY_DIFUSER_ARGS), workflow,
# tests (GPU_TESTS: pytest arguments, e.g. "tests/gpu/test_im_cuda.py -k auto"), tests-dist (every
# tests/gpu/test_dist*.py: needs two GPUs) and bench-dist (BENCH_DIST_ARGS, e.g. "--parts imm --budget 200").
# MPI (mpi4py + MPICH) comes from carried wheels in .whl/ when the machine has no mpi4py or no mpiexec (docs/multigpu.md).
# Each stage must fit the machine's 10-minute command limit; run several in one call when they fit.
# Wheels for packages the machine lacks (snakemake) travel in .whl/ (carry it).
set -uo pipefail
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [[ " $* " == *" workflow "* ]] && [ -d .whl ] && ! python3 -c "import snakemake" 2>/dev/null; then  # only the workflow needs it
  python3 -m pip install -q --no-index --find-links .whl --target /tmp/site snakemake >"$OUT/pip.log" 2>&1 \
    || echo "wheel install failed (see pip.log)"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}:/tmp/site"
export PATH="/tmp/site/bin:$PATH"
if ls .whl/mpi4py-*.whl >/dev/null 2>&1 && { ! python3 -c "import mpi4py" 2>/dev/null || ! command -v mpiexec >/dev/null; }; then
  python3 -m pip install -q --ignore-installed --no-index --find-links .whl --prefix /tmp/mpi mpi4py mpich >"$OUT/pip-mpi.log" 2>&1 \
    || echo "mpi wheel install failed (see pip-mpi.log)"
  export PATH="/tmp/mpi/bin:$PATH" LD_LIBRARY_PATH="/tmp/mpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  site=$(find /tmp/mpi -type d -name mpi4py -path "*-packages/*" | head -1)  # the scheme's folder, whichever it is
  PYTHONPATH="$PYTHONPATH:$(dirname "${site:-/tmp/mpi/none/mpi4py}")"
  export PYTHONPATH
fi
# Open MPI's mpiexec refuses root (the machine's user) unless told; MPICH ignores these
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
run_stage() {
  local name=$1; shift
  echo "== $name: $*"
  local t0=$(date +%s)
  "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc after $(( $(date +%s) - t0 ))s"
  [ "$rc" -eq 0 ] || status=1
}
for stage in "$@"; do
  case "$stage" in
    info)
      run_stage info bash -c 'nvidia-smi; python3 --version; python3 -c "import cupy, numba, numpy; print(\"cupy\", cupy.__version__, \"numba\", numba.__version__, \"numpy\", numpy.__version__); from gpucore.backend import get_backend; import json; print(json.dumps(get_backend(\"cuda\").device_info(), indent=1))"; nproc; free -g' ;;
    tests-amcss)  # about 520 s on a fresh machine (CPU references compiled and run): a command of its own
      run_stage gpu-tests-amcss python3 -m pytest -m gpu tests/gpu/test_amcss_cuda.py -v -rA --durations=15 \
        --junitxml "$OUT/gpu-tests-amcss.xml" ;;
    tests-other)  # IM, oracle, random: about 90 s
      run_stage gpu-tests-other python3 -m pytest -m gpu tests/gpu -v -rA --durations=15 \
        --deselect tests/gpu/test_amcss_cuda.py --junitxml "$OUT/gpu-tests-other.xml" ;;
    tests)  # GPU_TESTS: the pytest arguments
      # shellcheck disable=SC2086
      run_stage gpu-tests python3 -m pytest -m gpu ${GPU_TESTS:-tests/gpu} -v -rA --durations=15 \
        --junitxml "$OUT/gpu-tests.xml" ;;
    tests-dist)  # two GPUs: the rank-count tests under mpiexec -n 2
      run_stage gpu-tests-dist python3 -m pytest -m gpu tests/gpu/test_dist*.py -v -rA --durations=15 \
        --junitxml "$OUT/gpu-tests-dist.xml" ;;
    bench-dist)
      # shellcheck disable=SC2086  # BENCH_DIST_ARGS: extra options, for example "--parts sds --budget 200"
      run_stage bench-dist python3 benchmarks/bench_dist.py "$OUT/dist" ${BENCH_DIST_ARGS:-} ;;
    bench-oracle)
      run_stage bench-oracle python3 benchmarks/bench_oracle.py "$OUT" ;;
    bench-im)
      run_stage bench-im python3 benchmarks/bench_im.py "$OUT" --data .shared_data ;;
    bench-fuseim)
      # shellcheck disable=SC2086  # BENCH_FUSEIM_ARGS: extra options, for example "--graphs TC --parts sweep"
      run_stage bench-fuseim python3 benchmarks/bench_fuseim.py "$OUT/fuseim" ${BENCH_FUSEIM_ARGS:-} ;;
    bench-amcss)
      run_stage bench-amcss python3 benchmarks/bench_amcss.py "$OUT" --data .shared_data ;;
    bench-merit)
      # shellcheck disable=SC2086  # BENCH_MERIT_ARGS: extra options, for example "--parts scale"
      run_stage bench-merit python3 benchmarks/bench_merit_gpu.py "$OUT" --data .shared_data ${BENCH_MERIT_ARGS:-} ;;
    bench-sds)
      # shellcheck disable=SC2086  # BENCH_SDS_ARGS: extra options, for example "--parts k,t --graphs livejournal"
      run_stage bench-sds python3 benchmarks/bench_sds.py "$OUT" --data .shared_data ${BENCH_SDS_ARGS:-} ;;
    bench-difuser)
      # shellcheck disable=SC2086  # BENCH_DIFUSER_ARGS: for example "--graphs youtube --settings p1"; GIM: gIM's
      # executable (built from LIS-Laboratory/gim beforehand), which adds its column
      run_stage bench-difuser python3 benchmarks/bench_difuser.py "$OUT/difuser" ${BENCH_DIFUSER_ARGS:-} \
        ${GIM:+--gim "$GIM"} ;;
    study-difuser)
      # shellcheck disable=SC2086  # STUDY_DIFUSER_ARGS: for example "--graph youtube --setting p1 --refines 0,32,256"
      run_stage study-difuser python3 benchmarks/study_difuser_worlds.py "$OUT/study-difuser" ${STUDY_DIFUSER_ARGS:-} ;;
    workflow)
      run_stage workflow bash workflow/gpu_reference.sh "$OUT" ;;
    *) echo "unknown stage $stage"; status=1 ;;
  esac
done
# the device returns a limited number of files: one archive holds everything the stages wrote
tar czf "/tmp/out.tgz" -C "$OUT" . && mv /tmp/out.tgz "$OUT/out.tgz"
exit $status
