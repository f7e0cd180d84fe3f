#!/usr/bin/env bash
# The GPU runs of the CUDA backend, as done on a lent H200 (the `device` tool; see docs/benchmarks.md):
#   1. pack (here, on a build machine):   bash bench/cuda_device_run.sh pack      -> .gpu/ (git-ignored)
#   2. run (on the GPU machine, repo root): bash bench/cuda_device_run.sh run OUT_DIR [SECTION...]
# SECTIONs (all when none is named): tests bench conv train amp det infer torch.
# `run` unpacks the binaries and their libraries, runs the GPU tests (CUDA against CPU for every op
# with a CUDA kernel), pd-bench on CUDA, pd-train on the GPU (f32, bf16 / f16 autocast, the
# determinism switch and a resume) beside PyTorch on the same GPU, and pd-infer --device cuda (pd-dist
# over NCCL ran in the first of these sessions: the pack must stay under the device tool's 64 MiB). At most 8 files land in OUT_DIR (the device tool returns no more).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: cuda_device_run.sh pack|run OUT_DIR [SECTION...]}

if [ "$mode" = pack ]; then
  # PACK_BINS: the binaries to take (all by default); PACK_TRAIN: keep only the first N training images
  # (the tree and the pack must stay under the device tool's 64 MiB); PACK_MODELS: model files (with
  # their .pdiparams, and a data YAML beside them: X.yaml for X.pdmodel) to run with pd-infer there, e.g.
  # ones pd-opt lowered for a CPU here.
  rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .gpu/data .gpu/models
  for b in ${PACK_BINS:-pd-train pd-bench pd-infer pd-opt gpu_tests param_diff}; do
    src=build/tools/$b; [ -f "$src" ] || src=build/tests/$b
    strip --strip-all -o ".gpu/bin/$b" "$src"
  done
  # Non-system libraries the binaries need (the GPU machine has CUDA, cuBLAS and cuDNN of its own).
  ldd .gpu/bin/* | awk '/=>/ {print $3}' | sort -u | grep -Ev 'libc\.so|libm\.so|libstdc|libgcc|ld-linux|libpthread|libdl|librt|cuda|cublas|cudnn|cudart' |
    while read -r lib; do cp -L "$lib" .gpu/lib/; done
  python3 - "${PACK_TRAIN:-60000}" <<'PY'
import gzip, struct, sys
n = int(sys.argv[1]); src = "/usr/share/datasets/fashion-mnist/"
for name, header in [("train-images-idx3-ubyte", 16), ("train-labels-idx1-ubyte", 8), ("t10k-images-idx3-ubyte", 16), ("t10k-labels-idx1-ubyte", 8)]:
    raw = gzip.open(src + name + ".gz").read()
    count = struct.unpack(">I", raw[4:8])[0]
    keep = min(count, n) if name.startswith("train") else count
    item = (len(raw) - header) // count
    open(".gpu/data/" + name, "wb").write(raw[:4] + struct.pack(">I", keep) + raw[8:header] + raw[header:header + keep * item])
PY
  xz -T2 -9 .gpu/bin/* .gpu/lib/* .gpu/data/*
  for m in ${PACK_MODELS:-}; do cp "$m" "${m%.pdmodel}.pdiparams" "${m%.pdmodel}.yaml" .gpu/models/; done
  cp ../shared/peers/torch_fmnist.py .gpu/ 2>/dev/null || true
  du -sh .gpu
  exit 0
fi

out=${2:?usage: cuda_device_run.sh pack|run OUT_DIR [SECTION...]}
shift 2
sections=" ${*:-tests bench conv train amp det infer torch} "
want() { [[ "$sections" == *" $1 "* ]]; }
mkdir -p "$out"
xz -d .gpu/bin/*.xz .gpu/lib/*.xz
chmod +x .gpu/bin/*
mkdir -p /usr/share/datasets/fashion-mnist
for f in .gpu/data/*.xz; do xz -dc "$f" | gzip -1 > "/usr/share/datasets/fashion-mnist/$(basename "$f" .xz).gz"; done
# NCCL (and cuDNN, if the toolkit there lacks it) from the machine's own PyTorch wheels, after its toolkit.
torch_libs=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${torch_libs}${LD_LIBRARY_PATH:-}
B=.gpu/bin
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if want tests; then
  timeout 240 $B/gpu_tests --reporter compact > "$out/gpu_tests.txt" 2>&1 || true
  tail -2 "$out/gpu_tests.txt"
fi
want bench && {
  for spec in "matmul --dtype bf16 --shape m8192n8192k8192 --direction fwd" "add --dtype f32 --input x=64x256x4096 --input y=64x256x4096 --direction fwd" \
              "add --dtype bf16 --input x=64x256x4096 --input y=64x256x4096 --direction fwd" "mul --dtype f16 --input x=64x256x4096 --input y=64x256x4096 --direction fwd"; do
    $B/pd-bench --backend cuda --format table $spec | grep -v "^#"
  done
  # conv2d with cuDNN's heuristic choice (PD_CUDNN_FIND=0), then with its measured fastest (the default).
  want conv && for conv in mb128ic64ih56oc64kh3ph1 mb128ic128ih28oc128kh3ph1 mb128ic256ih14oc256kh3ph1 mb128ic64ih56oc256kh1; do
    PD_CUDNN_FIND=0 $B/pd-bench --backend cuda --format table conv2d --dtype f32 --shape $conv | grep -v "^#" | sed 's/^/heuristic /'
    $B/pd-bench --backend cuda --format table conv2d --dtype f32 --shape $conv | grep -v "^#" | sed 's/^/find /'
  done
} > "$out/pd_bench.txt" 2>&1 || true
yaml_with() {  # YAML LINE: the recipe with LINE appended to its train: section (the file's last)
  { cat "$1"; echo "  $2"; } > "/tmp/$(basename "$1" .yaml)_$3.yaml"; echo "/tmp/$(basename "$1" .yaml)_$3.yaml"
}
train() {  # NAME ARGS...: one pd-train run, its epoch lines into train.txt
  local name=$1; shift
  echo "== $name: pd-train $*" >> "$out/train.txt"
  timeout 240 $B/pd-train "$@" --out "/tmp/run_$name" 2>&1 | grep -E "epoch|error|parameters|skipped" >> "$out/train.txt" || true
}
if want train; then
train mlp examples/mlp_fmnist.yaml --device cuda --epochs 2
train lenet examples/lenet_fmnist.yaml --device cuda --epochs 2
train resnet examples/resnet_fmnist.yaml --device cuda --epochs 2
fi
if want amp; then
train resnet_bf16 "$(yaml_with examples/resnet_fmnist.yaml "amp: {dtype: bf16, level: O1}" bf16)" --device cuda --epochs 2
train resnet_f16 "$(yaml_with examples/resnet_fmnist.yaml "amp: {dtype: f16, level: O1}" f16)" --device cuda --epochs 2
train mlp_bf16_o2 "$(yaml_with examples/mlp_fmnist.yaml "amp: {dtype: bf16, level: O2}" o2)" --device cuda --epochs 2
fi
if want train; then
# Is LeNet's step launch-bound? The same epoch at 8x the batch, and where a step's host time goes.
sed 's/batch_size: 64/batch_size: 512/' examples/lenet_fmnist.yaml > /tmp/lenet_b512.yaml
train lenet_b512 /tmp/lenet_b512.yaml --device cuda --epochs 2
echo "== lenet --profile" >> "$out/train.txt"
timeout 120 $B/pd-train examples/lenet_fmnist.yaml --device cuda --epochs 1 --profile --out /tmp/run_lenet_prof 2>&1 | tail -24 >> "$out/train.txt" || true
train vit examples/vit_fmnist.yaml --device cuda --epochs 2
want amp && train vit_bf16 "$(yaml_with examples/vit_fmnist.yaml "amp: {dtype: bf16, level: O1}" bf16)" --device cuda --epochs 2
fi
# The determinism switch: two runs, and a run stopped after epoch 1 and resumed, give the same bits.
det=$(yaml_with examples/resnet_fmnist.yaml "deterministic: true" det)
want det && {
  train det_a "$det" --device cuda --epochs 2 --limit 12800
  train det_b "$det" --device cuda --epochs 2 --limit 12800
  train det_c "$det" --device cuda --epochs 2 --limit 12800 --stop-after-epoch 1
  train det_c "$det" --device cuda --epochs 2 --limit 12800 --resume
  echo "== two deterministic runs:"; $B/param_diff /tmp/run_det_a/model.pdparams /tmp/run_det_b/model.pdparams 0 | tail -2
  echo "== resumed against uninterrupted:"; $B/param_diff /tmp/run_det_a/model.pdparams /tmp/run_det_c/model.pdparams 0 | tail -2
  echo "== without the switch (two runs):"
  train nodet_a examples/resnet_fmnist.yaml --device cuda --epochs 1 --limit 12800
  train nodet_b examples/resnet_fmnist.yaml --device cuda --epochs 1 --limit 12800
  $B/param_diff /tmp/run_nodet_a/model.pdparams /tmp/run_nodet_b/model.pdparams 0 | tail -2
} > "$out/checks.txt" 2>&1 || true
want infer && {
  for m in resnet vit; do
    for dev in cpu cuda; do
      echo "== pd-infer $m --device $dev --batch 64"
      timeout 60 $B/pd-infer /tmp/run_$m --data /tmp/run_$m/config.yaml --device $dev --batch 64 2>&1 | grep -E "accuracy|latency|throughput|target|error"
    done
    echo "== pd-infer $m --device cuda --batch 1 (random input)"
    timeout 60 $B/pd-infer /tmp/run_$m --device cuda --batch 1 --repeat 200 2>&1 | grep -E "latency|error"
  done
  # Models pd-opt lowered for a CPU (fused, blocked, Winograd and int8 ops) run on the GPU too.
  for model in .gpu/models/*.pdmodel; do
    [ -f "$model" ] || continue
    for dev in cpu cuda; do
      echo "== pd-infer $model --device $dev"
      timeout 60 $B/pd-infer "$model" --data "${model%.pdmodel}.yaml" --device $dev --batch 64 2>&1 | grep -E "accuracy|latency|error|lower"
    done
  done
} > "$out/infer.txt" 2>&1 || true
want torch && {
  for run in "mlp" "resnet" "resnet --amp bf16" "resnet --amp f16"; do
    timeout 120 python3 bench/torch_fmnist_cuda.py --arch $run --epochs 2 2>&1 | tail -2
  done
} > "$out/torch.txt" 2>&1 || true
