#!/usr/bin/env bash
# Side-by-side Fashion-MNIST training throughput: Tandem vs PyTorch and Keras 3, for the MLP or the CNN.
#
# Usage: bench/run_benchmark.sh mlp|cnn PATH/TO/TANDEM_BENCH_BINARY [--quick] [--epochs-fraction F] [--no-keras]
#
# Runs PyTorch in its fastest configuration for the model on this machine — MLP: one thread;
# CNN: two OpenMP threads with OpenBLAS single-threaded, so two thread pools do not fight over two
# cores — with OpenBLAS free to pick its AVX-512 kernel and glibc malloc kept from unmapping and
# re-faulting large buffers every step; then the Tandem binary under the same environment; and
# prints a markdown table. --quick times a fraction of the epoch for both (MLP a quarter, CNN a
# tenth; --epochs-fraction F picks another). Repeat runs on a shared VM vary; compare the ratio,
# and run on an otherwise idle machine.
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

# Shared benchmark environment: no forced OpenBLAS core type / L2 size, and large allocations stay
# mapped between steps. For the CNN, OpenBLAS is single-threaded: PyTorch's OpenMP pool owns the
# cores (the MLP's single PyTorch thread does better with OpenBLAS left free).
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
if [[ "$MODEL" == cnn ]]; then export OPENBLAS_NUM_THREADS=1; fi
export MALLOC_MMAP_THRESHOLD_=1073741824
export MALLOC_TRIM_THRESHOLD_=4294967296

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# Debian's PyTorch calls whichever libblas.so.3 the alternatives system selects; the reference
# BLAS (Debian's blas/libblas.so.3) runs its GEMMs about 20x slower, which would inflate every
# ratio below, even with OpenBLAS installed beside it for LAPACK.
BLAS="$("$PY" -c "import torch; torch.mm(torch.ones(64, 64), torch.ones(64, 64))
print(' '.join(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l or 'mkl' in l})))")"
if [[ "$BLAS" == */blas/libblas.so* || ( "$BLAS" != *openblas* && "$BLAS" != *mkl* ) ]]; then
    echo "refusing to run: PyTorch's GEMMs use an unoptimised BLAS (loaded: ${BLAS:-none}); install" \
         "libopenblas0-pthread (scripts/install-deps.sh --bench does) and select it as libblas.so.3" >&2
    exit 1
fi
echo "PyTorch's BLAS: $BLAS" >&2

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

"$PY" - "$MODEL" "$TMP/tandem.jsonl" "$TMP/torch.jsonl" "$TMP/keras.jsonl" <<'PYEOF'
import json
import sys


def load(path, peer):
    rates = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue  # tolerate non-JSON log lines
            rec = json.loads(line)
            if rec.get("peer") == peer and rec.get("model") == MODEL:
                rates[int(rec["batch"])] = float(rec["samples_per_s"])
    return rates


MODEL = sys.argv[1]
tandem = load(sys.argv[2], "tandem")
torch = load(sys.argv[3], "pytorch")
keras = load(sys.argv[4], "keras")


def fmt(v):
    return "n/a" if v is None else f"{v:,.0f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "n/a"


print("| batch | Tandem samples/s | PyTorch samples/s | ratio | Keras 3 samples/s | ratio to Keras |")
print("|---:|---:|---:|---:|---:|---:|")
for b in sorted(set(tandem) | set(torch)):
    t, p, k = tandem.get(b), torch.get(b), keras.get(b)
    print(f"| {b} | {fmt(t)} | {fmt(p)} | {ratio(t, p)} | {fmt(k)} | {ratio(t, k)} |")
if not tandem:
    sys.exit("no Tandem results parsed")
if not torch:
    sys.exit("no PyTorch results parsed")
PYEOF
