#!/usr/bin/env bash
# pd-convert's first target, a torchvision ResNet-18, at batch 1 and 8: bench/onnx_zoo.sh on that model
# (import time, parity with onnxruntime, pd-infer against onnxruntime in alternating rounds).
#   usage: bench/onnx_resnet18.sh [THREADS] [ROUNDS]     (PY as for bench/onnx_zoo.sh)
set -euo pipefail
MODELS=resnet18 BATCHES="1 8" exec "$(dirname "$0")/onnx_zoo.sh" "$@"
