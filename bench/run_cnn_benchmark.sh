#!/usr/bin/env bash
# Side-by-side Fashion-MNIST CNN training throughput: Tandem vs PyTorch.
#
# Usage: bench/run_cnn_benchmark.sh PATH/TO/TANDEM_BENCH_BINARY [--quick] [--epochs-fraction F]
#
# Runs PyTorch in its fastest configuration for this CNN (two OpenMP threads,
# OpenBLAS single-threaded so that two thread pools do not fight over two
# cores, OpenBLAS free to pick its AVX-512 kernel, glibc malloc kept from
# unmapping and re-faulting large activations every step), then the Tandem
# binary under the same environment, and prints a markdown table. A full
# CNN epoch takes PyTorch ~10 s per batch size; --quick times a tenth of the
# epoch for both (--epochs-fraction F picks another fraction). Repeat runs on
# a shared VM vary; compare the ratio, and run on an otherwise idle machine.
set -euo pipefail

usage() {
    echo "usage: $0 TANDEM_BENCH_BINARY [--quick] [--epochs-fraction F]" >&2
    exit 2
}

TANDEM_BIN=""
FRACTION=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) FRACTION=0.1 ;;
        --epochs-fraction)
            [[ $# -ge 2 ]] || usage
            FRACTION="$2"
            shift
            ;;
        --epochs-fraction=*) FRACTION="${1#*=}" ;;
        -h|--help) usage ;;
        -*) echo "unknown option: $1" >&2; usage ;;
        *)
            if [[ -n "$TANDEM_BIN" ]]; then usage; fi
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
TORCH_THREADS=2

EXTRA=()
if [[ -n "$FRACTION" ]]; then
    EXTRA=(--epochs-fraction "$FRACTION")
fi

# Shared benchmark environment: no forced OpenBLAS core type / L2 size,
# OpenBLAS single-threaded (PyTorch's OpenMP pool owns the cores), and large
# allocations stay mapped between steps.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export OPENBLAS_NUM_THREADS=1
export MALLOC_MMAP_THRESHOLD_=1073741824
export MALLOC_TRIM_THRESHOLD_=4294967296

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

echo "load before the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "Running PyTorch ($TORCH_THREADS threads)..." >&2
"$PY" "$HERE/torch_fashion_mnist.py" --model cnn --batch-sizes "$BATCHES" \
    --threads "$TORCH_THREADS" --json ${EXTRA[@]+"${EXTRA[@]}"} > "$TMP/torch.jsonl"

echo "Running Tandem ($TANDEM_BIN)..." >&2
"$TANDEM_BIN" --model cnn --batch-sizes "$BATCHES" --json \
    ${EXTRA[@]+"${EXTRA[@]}"} > "$TMP/tandem.jsonl"
echo "load after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$PY" - "$TMP/tandem.jsonl" "$TMP/torch.jsonl" <<'PYEOF'
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
            if rec.get("peer") == peer and rec.get("model") == "cnn":
                rates[int(rec["batch"])] = float(rec["samples_per_s"])
    return rates


tandem = load(sys.argv[1], "tandem")
torch = load(sys.argv[2], "pytorch")


def fmt(v):
    return "n/a" if v is None else f"{v:,.0f}"


print("| batch | Tandem samples/s | PyTorch samples/s | ratio |")
print("|---:|---:|---:|---:|")
for b in sorted(set(tandem) | set(torch)):
    t, p = tandem.get(b), torch.get(b)
    ratio = f"{t / p:.2f}" if t is not None and p else "n/a"
    print(f"| {b} | {fmt(t)} | {fmt(p)} | {ratio} |")
if not tandem:
    sys.exit("no Tandem results parsed")
if not torch:
    sys.exit("no PyTorch results parsed")
PYEOF
