#!/usr/bin/env bash
# Reference run of the workflow on a GPU machine: backend cuda on the six graphs that
# config/reference-gpu.yaml lists (read from a mirror folder), then tables, figures, cell results,
# report and provenance copied to OUTDIR (to be committed as results/reference/<name>/).
#
#   workflow/gpu_reference.sh OUTDIR [extra snakemake arguments, e.g. --config realizations=1]
#
# Expects, in the repository root (the working directory it switches to):
#   .shared_data/   the six .txt.gz files config/reference-gpu.yaml lists, with their SHA-256
#                   (git-ignored; the run uses it as its mirror, so no network is needed; the
#                   download rule checks every checksum)
#   .whl/           optional: wheels to install snakemake / cupy / gpucore from when missing (no index)
# Environment: PYTHON (default python3), CORES (default all).
set -euo pipefail

OUT=${1:?usage: workflow/gpu_reference.sh OUTDIR [snakemake args...]}
shift
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
CORES=${CORES:-all}
CONFIG=config/reference-gpu.yaml
CONFIGS=("$CONFIG")
START=$(date +%s)
log() { echo "[gpu_reference $(($(date +%s) - START))s] $*" >&2; }

# 1. tools: install what is missing from local wheels (the GPU machine has no network)
pip_local() { "$PY" -m pip install --quiet --no-index --find-links .whl "$@"; }
if ! "$PY" -c "import gpucore" 2>/dev/null; then
    log "installing gpucore (editable) from .whl"
    pip_local --no-build-isolation -e .
fi
if ! "$PY" -c "import snakemake" 2>/dev/null; then
    log "installing snakemake from .whl"
    pip_local snakemake
fi
if [ "${ALLOW_CPU:-0}" != 1 ] && ! "$PY" -c "import cupy" 2>/dev/null; then
    log "installing cupy from .whl"
    pip_local cupy-cuda12x || pip_local cupy-cuda13x
fi
BIN=$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")
export PATH="$BIN:$HOME/.local/bin:$PATH"
if ! command -v gpucore >/dev/null; then
    # gpucore importable (e.g. through PYTHONPATH) but its console script not installed: a shim
    SHIM=$(mktemp -d)
    printf '#!/bin/sh\nexec "%s" -m gpucore "$@"\n' "$("$PY" -c 'import sys; print(sys.executable)')" > "$SHIM/gpucore"
    chmod +x "$SHIM/gpucore"
    export PATH="$SHIM:$PATH"
    log "gpucore console script missing: using $SHIM/gpucore (python -m gpucore)"
fi
command -v snakemake >/dev/null || { echo "snakemake is not on PATH after installation" >&2; exit 1; }
gpucore --help >/dev/null || { echo "gpucore does not run" >&2; exit 1; }
if [ "${ALLOW_CPU:-0}" != 1 ]; then  # ALLOW_CPU=1: rehearsal without a GPU (with --config backend=cpu ...)
    "$PY" -c "from gpucore.backend import cuda_available; import sys; sys.exit(0 if cuda_available() else 1)" \
        || { echo "no CUDA device visible to CuPy: this script is for the GPU machine" >&2; exit 1; }
fi

# 2. data: the six graphs of config/reference-gpu.yaml as a local mirror
for f in wiki-Vote.txt.gz email-Eu-core.txt.gz soc-Epinions1.txt.gz facebook_combined.txt.gz ca-GrQc.txt.gz nethept.txt.gz; do
    [ -f ".shared_data/$f" ] || { echo "missing .shared_data/$f (the mirror files config/reference-gpu.yaml lists)" >&2; exit 1; }
done

# 3. the workflow
export GPUCORE_PROGRESS=0
log "snakemake --configfile ${CONFIGS[*]} --cores $CORES $*"
set -o pipefail
snakemake --configfile "${CONFIGS[@]}" --cores "$CORES" --resources gpu=1 "$@" 2>&1 | tee "$OUT/snakemake.log"
log "report"
snakemake --configfile "${CONFIGS[@]}" --report "$OUT/report.html" "$@" >> "$OUT/snakemake.log" 2>&1

# 4. copy this configuration's output tree (config `output`; its logs stay) to OUTDIR
TREE=$("$PY" -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['output'])" "$CONFIG")
for part in tables figures cells config.yaml config.html; do
    if [ -e "$TREE/$part" ]; then cp -r "$TREE/$part" "$OUT/"; fi
done
if [ -d "$TREE/benchmarks/cells" ]; then  # the Snakemake benchmark of every solve / verify job
    mkdir -p "$OUT/benchmarks" && cp -r "$TREE/benchmarks/cells" "$OUT/benchmarks/"
fi
for c in "${CONFIGS[@]}"; do cp "$c" "$OUT/$(basename "$c")"; done

# 5. provenance
{
    echo "# Workflow reference run (backend cuda)"
    echo
    echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if [ -n "${GPUCORE_COMMIT:-}" ]; then  # a copy of the tree without .git (the GPU machine)
        echo "- commit: $GPUCORE_COMMIT"
    elif git rev-parse HEAD >/dev/null 2>&1; then
        echo "- commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- Snakefile rules workflow config || echo ' (workflow files modified)')"
    else
        echo "- commit: unknown (not a git checkout)"
    fi
    echo "- command: workflow/gpu_reference.sh OUTDIR $*  (snakemake --configfile ${CONFIGS[*]} --cores $CORES)"
    echo "- device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
    echo "- host: $(nproc) CPU cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
    echo "- versions: $("$PY" -c 'import platform, snakemake, numpy, numba; import cupy; print(f"python {platform.python_version()}, snakemake {snakemake.__version__}, numpy {numpy.__version__}, numba {numba.__version__}, cupy {cupy.__version__}")' 2>/dev/null)"
    echo "- wall time: $(($(date +%s) - START)) s"
    echo
    echo "Files: the configuration's output tree ($TREE: tables/ (CSV, Markdown, LaTeX, HTML), figures/, cells/"
    echo "(result and oracle report of every cell), benchmarks/cells/ (Snakemake benchmark of every solve and verify"
    echo "job), config.yaml (the merged configuration)), report.html, the config files, snakemake.log."
    echo
    if [ -f "$OUT/tables/amcss_summary.md" ]; then cat "$OUT/tables/amcss_summary.md"; echo; fi
    if [ -f "$OUT/tables/im_summary.md" ]; then cat "$OUT/tables/im_summary.md"; fi
} > "$OUT/README.md"
log "done: $OUT"
