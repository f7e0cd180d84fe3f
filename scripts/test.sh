#!/usr/bin/env bash
# The README's test command: set up, build, run every test; then the same for a build without oneDNN
# and without CUDA (PD_WITH_ONEDNN=OFF PD_WITH_CUDA=OFF: every op on its reference kernel), so that
# the optional backends stay optional. GPU tests (label gpu) report as skipped on a machine without one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
bash scripts/build.sh build-noonednn -DPD_WITH_ONEDNN=OFF -DPD_WITH_CUDA=OFF
ctest --test-dir build-noonednn --output-on-failure -j "$(nproc)"
