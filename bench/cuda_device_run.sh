#!/usr/bin/env bash
# The GPU runs of the CUDA backend, as done on a lent H200 (the `device` tool; see docs/benchmarks.md):
#   1. pack (here, on a build machine):   bash bench/cuda_device_run.sh pack      -> .gpu/ (git-ignored)
#   2. run (on the GPU machine, repo root): bash bench/cuda_device_run.sh run OUT_DIR
# `run` unpacks the binaries and their libraries, runs the GPU tests (CUDA against CPU for every op
# with a CUDA kernel), pd-bench on CUDA, and pd-train on the GPU beside PyTorch on the same GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: cuda_device_run.sh pack|run OUT_DIR}

if [ "$mode" = pack ]; then
  rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .gpu/data
  for b in build/tools/pd-train build/tools/pd-bench build/tests/gpu_tests; do
    strip --strip-debug -o ".gpu/bin/$(basename "$b")" "$b"
  done
  # Non-system libraries the binaries need (the GPU machine has CUDA, cuBLAS and cuDNN of its own).
  ldd .gpu/bin/* | awk '/=>/ {print $3}' | sort -u | grep -Ev 'libc\.so|libm\.so|libstdc|libgcc|ld-linux|libpthread|libdl|librt|cuda|cublas|cudnn|cudart' |
    while read -r lib; do cp -L "$lib" .gpu/lib/; done
  xz -T2 -6 .gpu/bin/* .gpu/lib/*
  cp /usr/share/datasets/fashion-mnist/*.gz .gpu/data/
  cp ../shared/peers/torch_fmnist.py .gpu/ 2>/dev/null || true
  du -sh .gpu
  exit 0
fi

out=${2:?usage: cuda_device_run.sh run OUT_DIR}
mkdir -p "$out"
xz -d .gpu/bin/*.xz .gpu/lib/*.xz
chmod +x .gpu/bin/*
mkdir -p /usr/share/datasets/fashion-mnist && cp .gpu/data/*.gz /usr/share/datasets/fashion-mnist/
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
.gpu/bin/gpu_tests --reporter compact 2>&1 | tail -400 > "$out/gpu_tests.txt" || true
tail -3 "$out/gpu_tests.txt"
bench=".gpu/bin/pd-bench --backend cuda --format table"
{
  $bench matmul --dtype bf16 --shape m8192n8192k8192 --direction fwd
  $bench matmul --dtype f16 --shape m8192n8192k8192 --direction fwd
  $bench matmul --dtype f32 --shape m4096n4096k4096 --direction fwd
  $bench add --dtype f32 --input x=64x256x4096 --input y=64x256x4096 --direction fwd
  $bench relu --dtype f32 --input x=64x256x4096 --direction fwd
  $bench add --dtype bf16 --input x=64x256x4096 --input y=64x256x4096 --direction fwd
  for conv in mb128ic64ih56oc64kh3ph1 mb128ic128ih28oc128kh3ph1 mb128ic256ih14oc256kh3ph1 mb128ic64ih56oc256kh1; do
    $bench conv2d --dtype f32 --shape $conv
  done
} 2>&1 | tee "$out/pd_bench.txt" || true
train() {  # NAME YAML FLAGS...
  local name=$1; shift
  timeout 300 .gpu/bin/pd-train "$@" --out "/tmp/run_$name" 2>&1 | grep -E "epoch|error|parameters" | tee "$out/train_$name.txt" || true
}
train mlp_cuda examples/mlp_fmnist.yaml --device cuda --epochs 2
train resnet_cuda examples/resnet_fmnist.yaml --device cuda --epochs 2
train lenet_cuda examples/lenet_fmnist.yaml --device cuda --epochs 2 || true
train resnet_cpu2 examples/resnet_fmnist.yaml --threads 2 --epochs 1 --limit 6000
for arch in mlp resnet; do
  timeout 300 python3 bench/torch_fmnist_cuda.py --arch $arch --epochs 2 2>&1 | tee "$out/torch_$arch.txt" || true
done
