#!/usr/bin/env bash
# Installs what is missing, builds Tandem and trains the Fashion-MNIST MLP example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target fashion_mnist_mlp
./build/fashion_mnist_mlp
