#!/usr/bin/env bash
# The device checks for an NVIDIA GPU (docs/architecture.md, "Devices"): the model tests on
# the GPU, then the product benchmark on it beside the CPU.
#
#   tools/cuda_check.sh [THREADS]
#
# 1. `cargo test --release --features cuda` of the three model test files with
#    PHIGUARD_DEVICE=cuda, so every model they load lives on the GPU (an explicit `cuda` that
#    does not open fails the tests, it does not fall back to the CPU):
#    tests/parity.rs (every family against transformers, max |Δlogit| <= 1e-4),
#    tests/bundled_model.rs (the bundled model's spans and token labels against
#    transformers') and tests/precision.rs (int8 is a CPU kernel: on the GPU it must give
#    f32's logits exactly).
# 2. `tools/bench_product.py --device cuda --skip-onnx`: whole-process `phiguard deid` on the
#    GPU and on the CPU, transformers on both, and `phiguard serve` on the GPU.
#
# Needs the CUDA toolkit (nvcc; CUDA_COMPUTE_CAP set where no GPU is visible at build time)
# and a Python with torch, transformers and tokenizers for step 2. With PHIGUARD_CUDA_BINS=DIR
# nothing is built: DIR holds `phiguard` and test binaries of those files (any names), built
# elsewhere with `--features cuda` from this commit; each is run.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
export PHIGUARD_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

if [ -n "${PHIGUARD_CUDA_BINS:-}" ]; then
  bins=$PHIGUARD_CUDA_BINS
  for t in "$bins"/*; do
    [ "$(basename "$t")" = phiguard ] && continue
    echo "== $(basename "$t") (PHIGUARD_DEVICE=cuda)"
    "$t" --test-threads=1
  done
  phiguard=$bins/phiguard
else
  cargo test --release --features cuda --test parity --test bundled_model --test precision \
    -- --test-threads=1
  cargo build --release --features cuda --bin phiguard
  phiguard=${CARGO_TARGET_DIR:-target}/release/phiguard
fi

echo "== bench_product --device cuda, $threads threads"
python3 tools/bench_product.py --device cuda --skip-onnx --phiguard "$phiguard" \
  --threads "$threads" --runs "${RUNS:-2}" --clients "${CLIENTS:-1,4,16,64}"
