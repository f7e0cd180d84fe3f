#!/usr/bin/env bash
# Installs every build and test dependency from Debian packages. Idempotent: installs only what is missing.
set -euo pipefail
PKGS=(build-essential cmake ninja-build ccache pkg-config libeigen3-dev libdnnl-dev libyaml-cpp-dev libfmt-dev
      libcli11-dev catch2 zlib1g-dev libprotobuf-dev protobuf-compiler libgloo-dev libonnx-dev nlohmann-json3-dev dataset-fashion-mnist)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
