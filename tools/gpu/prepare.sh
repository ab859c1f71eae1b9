#!/usr/bin/env bash
# Prepares what tools/gpu/check.sh carries to a GPU machine that can reach nothing: the
# folder .gpu/ (git-ignored) with the OpenBLAS wheel stage 3 links against and the CUDA
# driver bindings stage 4's launch entry is built against (cuda-bindings and what it
# imports), for that machine's Python (GPU_PYTHON_VERSION, default 3.12), and the xsimd
# headers stage 3 is written on. Everything else the check needs (a compiler, Cython, NumPy, CuPy, PyTorch
# CUDA, pytest) the GPU machine is expected to have; check.sh says what is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
VERSION=${GPU_PYTHON_VERSION:-3.12}
CARRY=.gpu
OPENBLAS=$(sed -n 's/.*"scipy-openblas32\([^"]*\)".*/scipy-openblas32\1/p' pyproject.toml | head -1)
BINDINGS=$(sed -n 's/.*"cuda-bindings\([^"]*\)".*/cuda-bindings\1/p' pyproject.toml | head -1)

rm -rf "$CARRY" && mkdir -p "$CARRY/wheels" "$CARRY/include"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$VERSION" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$CARRY/wheels" "${OPENBLAS:-scipy-openblas32}" "${BINDINGS:-cuda-bindings}" \
  "cuda-pathfinder" ||
  { echo "gpu-check prepare: could not download ${OPENBLAS:-scipy-openblas32} and ${BINDINGS:-cuda-bindings}" \
         "for Python $VERSION" >&2; exit 1; }

xsimd=""
for d in "${XSIMD_INCLUDE:-}" "${CONDA_PREFIX:-/nonexistent}/include" /usr/local/include /usr/include; do
  [ -n "$d" ] && [ -f "$d/xsimd/xsimd.hpp" ] && { xsimd=$d; break; }
done
[ -n "$xsimd" ] || { echo "gpu-check prepare: no xsimd headers (apt install libxsimd-dev, or set XSIMD_INCLUDE)" >&2; exit 1; }
cp -r "$xsimd/xsimd" "$CARRY/include/"
echo "prepared $CARRY/: $(ls "$CARRY/wheels" | tr '\n' ' ')and xsimd from $xsimd ($(du -sh "$CARRY" | cut -f1))"
