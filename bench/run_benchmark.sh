#!/usr/bin/env bash
# Side-by-side Fashion-MNIST training throughput: Tandem vs PyTorch and Keras 3, for the MLP or the CNN.
#
# Usage: bench/run_benchmark.sh mlp|cnn PATH/TO/TANDEM_BENCH_BINARY [--quick] [--epochs-fraction F] [--no-keras]
#
# Runs PyTorch in its fastest configuration for the model on this machine — MLP: one thread;
# CNN: two OpenMP threads with OpenBLAS single-threaded, so two thread pools do not fight over two
# cores — with OpenBLAS free to pick its AVX-512 kernel and glibc malloc kept from unmapping and
# re-faulting large buffers every step; then the Tandem binary under the same environment; and
# prints a markdown table, and one of memory at batch 512 (Tandem's planned arena for a step
# against PyTorch's peak resident-set growth, measured in a process of its own). --quick times a
# fraction of the epoch for both (MLP a quarter, CNN a tenth; --epochs-fraction F picks another).
# Repeat runs on a shared VM vary; compare the ratio, and run on an otherwise idle machine.
#
# Keras 3 runs on its JAX CPU backend (XLA-compiled steps, several per call: its fastest setup
# here) from a virtual environment beside the Tandem binary (keras-venv, made on first use from
# PyPI; the README's commands never install it). --no-keras leaves its column out.
set -euo pipefail

usage() {
    echo "usage: $0 mlp|cnn TANDEM_BENCH_BINARY [--quick] [--epochs-fraction F] [--no-keras]" >&2
    exit 2
}

MODEL="${1:-}"
case "$MODEL" in
    mlp) TORCH_THREADS=1; QUICK_FRACTION=0.25 ;;
    cnn) TORCH_THREADS=2; QUICK_FRACTION=0.1 ;;
    *) usage ;;
esac
shift

TANDEM_BIN=""
FRACTION=""
KERAS=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) FRACTION=$QUICK_FRACTION ;;
        --epochs-fraction)
            [[ $# -ge 2 ]] || usage
            FRACTION="$2"
            shift
            ;;
        --epochs-fraction=*) FRACTION="${1#*=}" ;;
        --no-keras) KERAS=0 ;;
        -h|--help) usage ;;
        -*) echo "unknown option: $1" >&2; usage ;;
        *)
            [[ -z "$TANDEM_BIN" ]] || usage
            TANDEM_BIN="$1"
            ;;
    esac
    shift
done
[[ -n "$TANDEM_BIN" ]] || usage
if [[ ! -x "$TANDEM_BIN" ]]; then
    echo "not an executable: $TANDEM_BIN" >&2
    exit 1
fi

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
BATCHES=32,128,512

EXTRA=()
if [[ -n "$FRACTION" ]]; then
    EXTRA=(--epochs-fraction "$FRACTION")
fi

# The benchmark environment and the check that PyTorch is on an optimised BLAS (bench/peer_env.sh).
# For the CNN, OpenBLAS is single-threaded: PyTorch's OpenMP pool owns the cores (the MLP's single
# PyTorch thread does better with OpenBLAS left free).
if [[ "$MODEL" == cnn ]]; then export OPENBLAS_NUM_THREADS=1; fi
source "$HERE/peer_env.sh"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

echo "load before the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "Running PyTorch ($TORCH_THREADS threads)..." >&2
"$PY" "$HERE/torch_fashion_mnist.py" --model "$MODEL" --batch-sizes "$BATCHES" \
    --threads "$TORCH_THREADS" --json ${EXTRA[@]+"${EXTRA[@]}"} > "$TMP/torch.jsonl"

: > "$TMP/keras.jsonl"
if [[ $KERAS == 1 ]]; then
    VENV="$(cd "$(dirname "$TANDEM_BIN")" && pwd)/keras-venv"
    if [[ ! -x "$VENV/bin/python" ]]; then
        echo "Making $VENV (keras>=3,<4 and jax[cpu] from PyPI)..." >&2
        "$PY" -m venv "$VENV" && "$VENV/bin/pip" install -q "keras>=3,<4" "jax[cpu]" numpy >&2 || rm -rf "$VENV"
    fi
    if [[ -x "$VENV/bin/python" ]]; then
        echo "Running Keras 3 (JAX CPU)..." >&2
        KERAS_BACKEND=jax "$VENV/bin/python" "$HERE/keras_fashion_mnist.py" --model "$MODEL" --batch-sizes "$BATCHES" \
            --json ${EXTRA[@]+"${EXTRA[@]}"} > "$TMP/keras.jsonl"
    else
        echo "no Keras column: could not make $VENV (python3-venv and network access to PyPI are needed)" >&2
    fi
fi

echo "Running Tandem ($TANDEM_BIN)..." >&2
"$TANDEM_BIN" --model "$MODEL" --batch-sizes "$BATCHES" --json \
    ${EXTRA[@]+"${EXTRA[@]}"} > "$TMP/tandem.jsonl"
echo "load after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# Memory at batch 512 in a process of its own, where the resident-set growth is exact.
"$PY" "$HERE/torch_fashion_mnist.py" --model "$MODEL" --batch-sizes 512 --threads "$TORCH_THREADS" \
    --epochs-fraction 0.05 --json > "$TMP/torch_memory.jsonl"

"$PY" - "$MODEL" "$TMP/tandem.jsonl" "$TMP/torch.jsonl" "$TMP/keras.jsonl" "$TMP/torch_memory.jsonl" <<'PYEOF'
import json
import sys


def load(path, peer, key="samples_per_s"):
    values = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue  # tolerate non-JSON log lines
            rec = json.loads(line)
            if rec.get("peer") == peer and rec.get("model") == MODEL and key in rec:
                values[int(rec["batch"])] = float(rec[key])
    return values


MODEL = sys.argv[1]
tandem = load(sys.argv[2], "tandem")
torch = load(sys.argv[3], "pytorch")
keras = load(sys.argv[4], "keras")
arena = load(sys.argv[2], "tandem", "arena_mb")
growth = load(sys.argv[5], "pytorch", "peak_rss_growth_mb")


def fmt(v):
    return "n/a" if v is None else f"{v:,.0f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "n/a"


print("| batch | Tandem samples/s | PyTorch samples/s | ratio | Keras 3 samples/s | ratio to Keras |")
print("|---:|---:|---:|---:|---:|---:|")
for b in sorted(set(tandem) | set(torch)):
    t, p, k = tandem.get(b), torch.get(b), keras.get(b)
    print(f"| {b} | {fmt(t)} | {fmt(p)} | {ratio(t, p)} | {fmt(k)} | {ratio(t, k)} |")
print()
print("| batch | Tandem planned arena per step | PyTorch peak RSS growth | ratio |")
print("|---:|---:|---:|---:|")
for b in sorted(set(arena) & set(growth)):
    print(f"| {b} | {arena[b]:.1f} MB | {growth[b]:.1f} MB | {arena[b] / growth[b]:.2f} |")
if not tandem:
    sys.exit("no Tandem results parsed")
if not torch:
    sys.exit("no PyTorch results parsed")
PYEOF
