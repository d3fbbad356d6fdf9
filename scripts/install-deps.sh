#!/usr/bin/env bash
# Installs the Debian packages Tandem builds and tests with; does nothing when they are present.
# Pass --bench to also install what the benchmarks compare against (PyTorch, on OpenBLAS: with the
# reference BLAS alone Debian's PyTorch runs about 20x slower).
set -euo pipefail
packages=(cmake g++ make libeigen3-dev doctest-dev nlohmann-json3-dev zlib1g-dev libhdf5-dev libzip-dev libpng-dev libspng-dev libjpeg-dev libarchive-dev libopenblas-pthread-dev libdnnl-dev libopenmpi-dev openmpi-bin graphviz dataset-fashion-mnist fortunes)
if [[ "${1:-}" == "--bench" ]]; then packages+=(python3-torch python3-numpy libopenblas0-pthread); fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
