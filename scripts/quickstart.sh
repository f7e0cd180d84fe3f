#!/usr/bin/env bash
# The README's quick start: set up, build, and train the default example (LeNet-5 on Fashion-MNIST).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# The run goes to runs/lenet_fmnist, or runs/lenet_fmnist-2, -3... when an earlier run is there (pd-train
# never replaces a run it was not asked to); the directory is named in the output.
build/tools/pd-train examples/lenet_fmnist.yaml "$@"
