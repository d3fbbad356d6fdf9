#!/usr/bin/env bash
# For a machine with a GPU: builds Tandem with CUDA, runs the GPU tests, trains the Fashion-MNIST
# examples on gpu:0, and runs the GPU benchmarks against PyTorch on the same GPU. Prints
# everything and writes it under $OUT (default build-gpu/results). Ends within 8 minutes on a
# machine with 16 cores; exits non-zero when a test fails.
#
# The build needs the Debian packages of scripts/install-deps.sh. A machine that cannot install
# them can be handed a build made elsewhere: `scripts/gpu-pack.sh` (run on a machine that builds
# Tandem) puts the CUDA build, the libraries it loads and the Fashion-MNIST files into
# build-gpu/pack.tar.xz; copy that file over and this script unpacks and uses it instead of
# building.
#
#   scripts/gpu-check.sh [--quick]     --quick: tests only, no examples or benchmarks
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/build-gpu/results}
mkdir -p "$OUT"
quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
status=0
log() { echo "== $*" | tee -a "$OUT/gpu-check.log"; }
run() {  # run NAME COMMAND...: output to the log and $OUT/NAME.txt; a failure makes the script fail
  local name=$1
  shift
  log "$name: $*"
  local t0=$SECONDS
  "$@" 2>&1 | tee "$OUT/$name.txt" | tail -n 40
  local rc=${PIPESTATUS[0]}
  log "$name: exit $rc after $((SECONDS - t0)) s"
  ((rc == 0)) || status=1
}

log "machine: $(nproc) cores; $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"

[[ ! -x build-gpu/bin/test_cuda && -f build-gpu/pack.tar.xz ]] && tar -C build-gpu -xJf build-gpu/pack.tar.xz
if [[ -x build-gpu/bin/test_cuda ]]; then
  log "using the prebuilt binaries in build-gpu/bin"
  bin=$PWD/build-gpu/bin
  # cuBLAS, cuDNN and NCCL: the CUDA installation's, else those of the nvidia-* wheels PyTorch uses.
  wheels=$(python3 -c "import nvidia; print(list(nvidia.__path__)[0])" 2>/dev/null || true)
  wheel_libs=$([[ -n $wheels ]] && find "$wheels" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd: || true)
  export LD_LIBRARY_PATH="$PWD/build-gpu/lib:/usr/local/cuda/lib64:$wheel_libs:${LD_LIBRARY_PATH:-}:$PWD/build-gpu/lib/fallback"
  ldd "$bin/test_cuda" | grep "not found" | tee -a "$OUT/gpu-check.log"
  # The examples and both benchmarks read the Debian package's folder.
  data=/usr/share/datasets/fashion-mnist
  if [[ ! -d $data && -d build-gpu/fashion-mnist ]]; then mkdir -p "$(dirname $data)" && cp -r build-gpu/fashion-mnist "$data"; fi
else
  command -v apt-get >/dev/null && scripts/install-deps.sh >/dev/null
  run configure cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTANDEM_CUDA=ON
  run build cmake --build build-gpu -j"$(nproc)" --target tandem test_cuda test_gradients test_math_ops fashion_mnist_mlp fashion_mnist_cnn bench_fashion_mnist
  bin=$PWD/build-gpu
fi
[[ -x $bin/test_cuda ]] || { log "no build: see $OUT/build.txt"; exit 1; }

# The gradient checks run every differentiable op on gpu:0 too and compare with the CPU.
run test_cuda "$bin/test_cuda" --success=false
run test_gradients "$bin/test_gradients"
run test_math_ops "$bin/test_math_ops"
((quick)) && exit $status

run example_mlp "$bin/fashion_mnist_mlp" gpu:0
run example_cnn "$bin/fashion_mnist_cnn" gpu:0
python=$(command -v python3)
for model in mlp cnn; do
  run "bench_tandem_$model" "$bin/bench_fashion_mnist" --model $model --device gpu:0 --batch-sizes 32,128,512 --epochs-fraction 0.5 --json
  run "bench_pytorch_$model" "$python" bench/torch_fashion_mnist.py --model $model --device cuda --batch-sizes 32,128,512 --epochs-fraction 0.5 --json
done
# Side by side: Tandem's samples/s over PyTorch's, per model and batch.
"$python" - "$OUT" <<'EOF' | tee "$OUT/ratios.txt"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def rates(name):
    path = out / f"{name}.txt"
    recs = [json.loads(l) for l in path.read_text().splitlines() if l.startswith("{")] if path.exists() else []
    return {r["batch"]: r["samples_per_s"] for r in recs}
for model in ("mlp", "cnn"):
    t, p = rates(f"bench_tandem_{model}"), rates(f"bench_pytorch_{model}")
    for b in sorted(t):
        if b in p:
            print(f"{model} batch {b:4d}: tandem {t[b]:10.0f}  pytorch {p[b]:10.0f} samples/s  ratio {t[b] / p[b]:.2f}")
EOF
exit $status
