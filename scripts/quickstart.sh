#!/usr/bin/env bash
# The README's quick start: set up, build, and train the default example (LeNet-5 on Fashion-MNIST).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
build/tools/pd-train examples/lenet_fmnist.yaml --out runs/lenet_fmnist "$@"
echo "run directory: runs/lenet_fmnist (metrics.jsonl, plot.svg, model.pdparams, checkpoint.pdckpt)"
