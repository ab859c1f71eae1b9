#!/usr/bin/env bash
# The one-shot hardware check of stage 4's cuda device, for a machine with an NVIDIA GPU
# that can reach nothing: it builds the compiled stages there, then runs, each within its
# own time budget (seconds; the variables below override them) and writing its results
# under RESULTS (default out/gpu-check):
#   conformance  the suite's tests on stage4_gpu[cuda] (-m "not slow"), JUnit XML and a summary
#   ladder       stagegrad cuda-ladder, 1024 to 8192, against cuBLAS and PyTorch CUDA
#   bandwidth    stagegrad cuda-bandwidth: the copy roof, then each bandwidth-bound kernel in GB/s
#   devices      stagegrad devices, with the cuda rows
#   zoo          the zoo's training steps on cuda against PyTorch CUDA (tools/gpu/zoo_steps.py)
# then prints a summary. Needs .gpu/ from tools/gpu/prepare.sh (./dev gpu-check prepare)
# beside it, and on the machine: Python 3.10+ with its headers, a C++ compiler, Cython,
# NumPy, CuPy, PyTorch (CUDA) and pytest. Where $OUT is set (a device machine's output
# folder), the results also go there as one archive.
# Without an NVIDIA GPU it refuses, with exit code 2. Otherwise it exits 1 when a step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
RESULTS=${1:-out/gpu-check}
: "${BUDGET_BUILD:=150}" "${BUDGET_CONFORMANCE:=180}" "${BUDGET_LADDER:=60}" "${BUDGET_DEVICES:=60}"
: "${BUDGET_ZOO:=60}" "${BUDGET_BANDWIDTH:=45}"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi is missing or lists none); run it on a machine with one" >&2
  exit 2
fi
if ! compgen -G ".gpu/wheels/*.whl" >/dev/null || [ ! -f .gpu/include/xsimd/xsimd.hpp ]; then
  echo "gpu-check: .gpu/ is not prepared: run ./dev gpu-check prepare where the package index is" \
       "reachable, and bring .gpu/ along" >&2
  exit 1
fi
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
START=$(date +%s%N)
STEPS=()
FAILED=0

step() {  # step NAME BUDGET COMMAND...: run it within BUDGET seconds, its output in NAME.log
  local name=$1 budget=$2; shift 2
  local t0 rc status
  t0=$(date +%s%N)
  echo "== $name (budget ${budget} s): $*"  # SIGINT first: pytest then still writes its summary
  timeout -s INT -k 20 "$budget" "$@" >"$RESULTS/$name.log" 2>&1
  rc=$?
  case $rc in
    0) status="ok" ;;
    124|137) status="ran out of its ${budget} s budget"; FAILED=1 ;;
    *) status="failed (exit code $rc)"; FAILED=1 ;;
  esac
  STEPS+=("$(printf '%-12s %6.1f s  %s' "$name" "$(( ($(date +%s%N) - t0) / 1000000 ))e-3" "$status")")
  tail -n 3 "$RESULTS/$name.log"
  return $rc
}

{
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu:     $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
  echo "cuda:    $(nvcc --version 2>/dev/null | tail -1 || echo 'no nvcc')"
  echo "cpu:     $(nproc) cores, $(uname -m), kernel $(uname -r)"
  echo "python:  $($PY -c 'import sys, sysconfig, os; print(sys.version.split()[0], sys.executable,
    "headers" if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else "NO HEADERS")')"
  for m in numpy cython cupy torch pytest xdist; do
    echo "$m: $($PY -c "import $m; print(getattr($m, '__version__', '?'))" 2>&1 | tail -1)"
  done
  echo "torch cuda: $($PY -c 'import torch; print(torch.version.cuda, torch.cuda.is_available())' 2>&1 | tail -1)"
} | tee "$RESULTS/machine.txt"

SITE=$(mktemp -d)
$PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .gpu/wheels/*.whl ||
  { echo "gpu-check: the carried wheels do not install on this Python" >&2; exit 1; }
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" XSIMD_INCLUDE="$PWD/.gpu/include" PYTHONUNBUFFERED=1

if step build "$BUDGET_BUILD" "$PY" setup.py build_ext --inplace; then
  workers=$(( $(nproc) > 12 ? 12 : $(nproc) ))
  per_test=(); $PY -c 'import pytest_timeout' 2>/dev/null && per_test=(--timeout 120)
  step conformance "$BUDGET_CONFORMANCE" "$PY" -m pytest common_tests -p no:cacheprovider -q -n "$workers" \
    --stages='stage4_gpu[cuda]' -k stage4_gpu -m "not slow" -rfE --tb=short "${per_test[@]}" \
    --junitxml="$RESULTS/conformance.xml"
  [ -f "$RESULTS/conformance.xml" ] && "$PY" tools/gpu/conformance_summary.py "$RESULTS/conformance.xml" \
    "$RESULTS/machine.txt" >"$RESULTS/conformance.md"
  step ladder "$BUDGET_LADDER" "$PY" -m stagegrad cuda-ladder --budget 1 --out "$RESULTS/ladder"
  step bandwidth "$BUDGET_BANDWIDTH" "$PY" -m stagegrad cuda-bandwidth --out "$RESULTS/bandwidth"
  step devices "$BUDGET_DEVICES" "$PY" -m stagegrad devices --out "$RESULTS/devices"
  step zoo "$BUDGET_ZOO" "$PY" tools/gpu/zoo_steps.py --budget 2 --out "$RESULTS/zoo"
fi

{
  echo
  echo "==== gpu-check summary ($(( ($(date +%s%N) - START) / 1000000000 )) s) ===="
  grep -E '^(gpu|cuda|python|torch cuda):' "$RESULTS/machine.txt"
  printf '%s\n' "${STEPS[@]}"
  [ -f "$RESULTS/conformance.log" ] && grep -E '^(FAILED|ERROR)|passed|failed' "$RESULTS/conformance.log" | tail -n 25
  for f in "$RESULTS"/ladder/*.md "$RESULTS"/bandwidth/*.md "$RESULTS"/devices/*.md "$RESULTS"/zoo/*.md; do
    [ -f "$f" ] && { echo; cat "$f"; }
  done
} | tee "$RESULTS/summary.txt"

if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
  tar -czf "$OUT/gpu-check.tar.gz" -C "$(dirname "$RESULTS")" "$(basename "$RESULTS")"
  cp "$RESULTS/summary.txt" "$OUT/"
fi
exit $FAILED
