#!/usr/bin/env bash
# The README's test command: set up, build, run every test; then the same for a second configuration
# without oneDNN and CUDA (every op on its reference kernel, so that the optional backends stay
# optional), built with AddressSanitizer and UndefinedBehaviorSanitizer, every report fatal
# (docs/testing.md). GPU tests (label gpu) report as skipped on a machine without one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
bash scripts/build.sh build-asan -DPD_WITH_ONEDNN=OFF -DPD_WITH_CUDA=OFF -DPD_SANITIZE=address,undefined
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
