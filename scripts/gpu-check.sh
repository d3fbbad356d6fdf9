#!/usr/bin/env bash
# For a machine with a GPU: builds Tandem with CUDA, runs the GPU tests, trains the Fashion-MNIST
# examples on gpu:0, and runs the GPU benchmarks against PyTorch on the same GPU. Prints
# everything and writes it under $OUT (default build-gpu/results). Ends within 8 minutes on a
# machine with 16 cores; exits non-zero when a test fails, a GPU test skips, an example's test
# accuracy falls short, or the GPU and CPU disagree.
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

# expect NAME PATTERN WHY: the run's output must contain PATTERN (an extended regex), else fail.
expect() {
  if grep -Eq "$2" "$OUT/$1.txt"; then log "$1: ok ($3)"; else log "$1: FAILED: $3"; status=1; fi
}
# refuse NAME PATTERN WHY: the run's output must not contain PATTERN.
refuse() {
  if grep -Eq "$2" "$OUT/$1.txt"; then log "$1: FAILED: $3: $(grep -Em1 "$2" "$OUT/$1.txt")"; status=1; else log "$1: ok ($3)"; fi
}
# accuracy_at_least NAME MIN: the example's "test accuracy: X" line must say X >= MIN.
accuracy_at_least() {
  local acc
  acc=$(grep -Eo "test accuracy: [0-9.]+" "$OUT/$1.txt" | tail -n1 | awk '{print $3}')
  if [[ -n $acc ]] && awk -v a="$acc" -v m="$2" 'BEGIN { exit !(a >= m) }'; then
    log "$1: ok (test accuracy $acc >= $2)"
  else
    log "$1: FAILED: test accuracy '${acc:-none}', expected at least $2"; status=1
  fi
}

# The gradient checks run every differentiable op on gpu:0 too and compare with the CPU; test_cuda
# trains on gpu:0 and on the CPU from one seed and compares the weights. On this machine a GPU
# test that skips is a failure: it means the GPU was not used.
run test_cuda "$bin/test_cuda" --success=false
refuse test_cuda "skipped: " "every GPU test ran (none skipped)"
expect test_cuda "Status: SUCCESS" "GPU and CPU agree within the tests' tolerances"
run test_gradients "$bin/test_gradients"
refuse test_gradients "skipped: " "every gradient check ran on the GPU too"
run test_math_ops "$bin/test_math_ops"
((quick)) && exit $status

# The examples' accuracies on the CPU, for 5 epochs: MLP about 0.88, CNN about 0.89.
run example_mlp "$bin/fashion_mnist_mlp" gpu:0
accuracy_at_least example_mlp 0.86
run example_cnn "$bin/fashion_mnist_cnn" gpu:0
accuracy_at_least example_cnn 0.87
python=$(command -v python3)
for model in mlp cnn; do
  run "bench_tandem_$model" "$bin/bench_fashion_mnist" --model $model --device gpu:0 --batch-sizes 32,128,512 --epochs-fraction 0.5 --json
  run "bench_pytorch_$model" "$python" bench/torch_fashion_mnist.py --model $model --device cuda --batch-sizes 32,128,512 --epochs-fraction 0.5 --json
done
# Mixed precision on the GPU's tensor cores: Tandem under mixed_bfloat16 against PyTorch's CUDA
# autocast with bfloat16 (docs/mixed-precision.md).
for model in mlp cnn; do
  run "bench_tandem_${model}_bf16" "$bin/bench_fashion_mnist" --model $model --device gpu:0 --batch-sizes 128,512 --epochs-fraction 0.25 --policy mixed_bfloat16 --json
  run "bench_pytorch_${model}_bf16" "$python" bench/torch_fashion_mnist.py --model $model --device cuda --batch-sizes 128,512 --epochs-fraction 0.25 --autocast bf16 --json
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
    for suffix, what in (("", "float32"), ("_bf16", "bf16 (autocast)")):
        t, p = rates(f"bench_tandem_{model}{suffix}"), rates(f"bench_pytorch_{model}{suffix}")
        for b in sorted(t):
            if b in p:
                print(f"{model} {what} batch {b:4d}: tandem {t[b]:10.0f}  pytorch {p[b]:10.0f} samples/s  ratio {t[b] / p[b]:.2f}")
    t32, t16 = rates(f"bench_tandem_{model}"), rates(f"bench_tandem_{model}_bf16")
    for b in sorted(t16):
        if b in t32:
            print(f"{model} batch {b:4d}: tandem mixed_bfloat16 / float32 {t16[b] / t32[b]:.2f}")
EOF
exit $status
