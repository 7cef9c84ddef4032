#!/usr/bin/env bash
# Installs the Debian packages syntorch needs to build and test, only those that are missing.
# Run as root (or with sudo available) on Debian 12 or newer.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  nlohmann-json3-dev libyaml-cpp-dev libboost-graph-dev libfmt-dev libcli11-dev
  libprotobuf-dev protobuf-compiler zlib1g-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-dev python3-pytest
  python3-torch python3-torchvision python3-onnx python3-jsonschema
  python3-pip python3-setuptools python3-wheel python3-venv
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
