#!/usr/bin/env bash
# A CUDA 13.0 build environment for `cargo build --features cuda` on a machine with no CUDA
# toolkit and no NVIDIA driver (a build machine, this project's CI host), made from NVIDIA's
# Python wheels; the binaries it builds run on a machine that has the driver and the
# libraries (`tools/cuda_check.sh` there).
#
#   tools/cuda_toolkit.sh DIR [COMPUTE_CAP]      # once: a venv under DIR, and DIR/env.sh
#   source DIR/env.sh && cargo build --release --features cuda
#
# COMPUTE_CAP is the GPU's (default 90, an H100 or H200): with no GPU visible at build time,
# candle's kernels are compiled for that one. What it sets up:
# * nvcc, its headers, NVVM and the runtime, cuBLAS, cuRAND and NVRTC, pinned to 13.0 (the
#   wheels put them under site-packages/nvidia/cu13: bin, include, lib), with the
#   unversioned `lib*.so` names the linker looks for (the wheels ship only the sonames);
# * `lib/stubs/libcuda.so`, a stub of the driver API (soname `libcuda.so.1`, every `cu*`
#   function cudarc declares, each returning CUDA_ERROR_UNKNOWN): linking needs the driver
#   library and only the GPU machine has it; at run time the real one is loaded by soname.
#   This is what the toolkit's own `lib64/stubs/libcuda.so` is for; the wheels lack it.
# * DIR/env.sh: CUDA_HOME, PATH, CUDARC_CUDA_VERSION (cudarc would otherwise parse
#   `nvcc --version`), CUDA_COMPUTE_CAP, LIBRARY_PATH, and CARGO_TARGET_DIR=DIR/target so
#   the CUDA build does not replace the CPU one's artifacts.
# Needs python3 (venv, pip), a C compiler and a C++ compiler (nvcc's host compiler).
set -euo pipefail
dir=${1:?usage: tools/cuda_toolkit.sh DIR [COMPUTE_CAP]}
cap=${2:-90}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)

python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install -q \
  nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
  nvidia-cuda-runtime==13.0.88 'nvidia-cuda-cccl==13.0.*' nvidia-cuda-nvrtc==13.0.88 \
  'nvidia-cublas==13.0.*' 'nvidia-curand==10.4.0.*'
cuda=$("$dir/venv/bin/python" -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))')
test -x "$cuda/bin/nvcc"

# The linker's names for the libraries cudarc links (`-lcublas` finds `libcublas.so`).
for so in "$cuda"/lib/lib*.so.*; do
  base=$(basename "$so")
  ln -sfn "$base" "$cuda/lib/${base%%.so.*}.so"
done

# The driver stub, from the function names cudarc's bindings use (the crate as locked).
cudarc=$(cd "$root" && cargo metadata --format-version 1 --features cuda 2>/dev/null | "$dir/venv/bin/python" -c '
import json, sys
pkgs = json.load(sys.stdin)["packages"]
print(next(p["manifest_path"] for p in pkgs if p["name"] == "cudarc").rsplit("/", 1)[0])')
mkdir -p "$cuda/lib/stubs"
grep -ohE '\bfn cu[A-Za-z0-9_]+' "$cudarc/src/driver/sys/mod.rs" | sort -u |
  sed -E 's/^fn (.*)$/int \1(void) { return 999; }/' > "$dir/libcuda_stub.c"
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$cuda/lib/stubs/libcuda.so" "$dir/libcuda_stub.c"

cat > "$dir/env.sh" <<EOF
# From tools/cuda_toolkit.sh: source before \`cargo build --features cuda\`.
export CUDA_HOME="$cuda" CUDA_PATH="$cuda" CUDA_ROOT="$cuda"
export PATH="$cuda/bin:\$PATH"
export CUDARC_CUDA_VERSION=13000 CUDA_COMPUTE_CAP=$cap
export LIBRARY_PATH="$cuda/lib:$cuda/lib/stubs\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export CARGO_TARGET_DIR="$dir/target"
EOF
echo "nvcc: $("$cuda/bin/nvcc" --version | tail -1)"
echo "stub driver: $(grep -c . "$dir/libcuda_stub.c") functions"
echo "now: source $dir/env.sh && cargo build --release --features cuda"
