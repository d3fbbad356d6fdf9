#!/usr/bin/env bash
# Prepares build-gpu/ for scripts/gpu-check.sh on a machine with a GPU that cannot install
# Tandem's build dependencies: a CUDA build of the GPU tests, the examples and the benchmark
# (stripped), the libraries they load that such a machine may lack (HDF5, libzip, libpng, ...;
# not glibc, not CUDA's: those come from the GPU machine's own CUDA installation), and the
# Fashion-MNIST files, also as one archive, build-gpu/pack.tar.xz, to copy over alone. Run it where
# Tandem builds (nvcc is enough; no GPU is needed).
#
#   scripts/gpu-pack.sh [BUILD_DIR]    default BUILD_DIR: build (configured with CUDA on)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
targets=(test_cuda test_gradients test_math_ops fashion_mnist_mlp fashion_mnist_cnn bench_fashion_mnist)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTANDEM_CUDA=ON >/dev/null
grep -q "TANDEM_WITH_CUDA=1" "$build/CMakeFiles/test_cuda.dir/flags.make" || { echo "gpu-pack: $build was configured without CUDA (no nvcc found?)" >&2; exit 1; }
cmake --build "$build" -j2 --target "${targets[@]}"
rm -rf build-gpu/bin build-gpu/lib
mkdir -p build-gpu/bin build-gpu/lib
for t in "${targets[@]}"; do strip -o "build-gpu/bin/$t" "$build/$t"; done
strip -o build-gpu/lib/libtandem.so.0.1 "$build/libtandem.so.0.1"
# Every library the binaries load from outside glibc and CUDA.
for lib in $(ldd "$build/libtandem.so.0.1" "$build/test_cuda" | awk '/=> \// {print $3}' | sort -u); do
  case $(basename "$lib") in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libgcc_s.so* | libstdc++.so*) ;;
    libcuda* | libcublas* | libcudnn* | libnccl* | libnvrtc* | libnvJitLink*) ;;
    libtandem*) ;;
    *) cp -L "$lib" build-gpu/lib/ ;;
  esac
done
# libstdc++ too: the binaries need GCC 12's or newer, which a GPU machine's image normally has, but
# carrying it costs little and removes the question. It goes last on the search path.
mkdir -p build-gpu/lib/fallback
cp -L "$(g++ -print-file-name=libstdc++.so.6)" build-gpu/lib/fallback/
rm -rf build-gpu/fashion-mnist
cp -r /usr/share/datasets/fashion-mnist build-gpu/fashion-mnist
# One compressed file to carry (the libraries shrink to a third).
tar -C build-gpu -cJf build-gpu/pack.tar.xz bin lib fashion-mnist
du -sh build-gpu/bin build-gpu/lib build-gpu/fashion-mnist build-gpu/pack.tar.xz
