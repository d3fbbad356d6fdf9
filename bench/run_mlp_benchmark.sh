#!/usr/bin/env bash
# Side-by-side Fashion-MNIST MLP training throughput: Tandem vs PyTorch.
#
# Usage: bench/run_mlp_benchmark.sh PATH/TO/TANDEM_BENCH_BINARY [--quick]
#
# Runs PyTorch in its fastest configuration for this MLP (one thread,
# OpenBLAS free to pick its AVX-512 kernel, glibc malloc kept from unmapping
# and re-faulting large buffers every step), then the Tandem binary under the
# same environment, and prints a markdown table. --quick times a quarter of
# the epoch for both. Repeat runs on a shared VM vary; compare the ratio.
set -euo pipefail

usage() {
    echo "usage: $0 TANDEM_BENCH_BINARY [--quick]" >&2
    exit 2
}

TANDEM_BIN=""
QUICK=0
for arg in "$@"; do
    case "$arg" in
        --quick) QUICK=1 ;;
        -h|--help) usage ;;
        -*) echo "unknown option: $arg" >&2; usage ;;
        *)
            if [[ -n "$TANDEM_BIN" ]]; then usage; fi
            TANDEM_BIN="$arg"
            ;;
    esac
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
if [[ "$QUICK" == 1 ]]; then
    EXTRA=(--epochs-fraction 0.25)
fi

# Shared benchmark environment: no forced OpenBLAS core type / L2 size, and
# large allocations stay mapped between steps.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export MALLOC_MMAP_THRESHOLD_=1073741824
export MALLOC_TRIM_THRESHOLD_=4294967296

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

echo "Running PyTorch (1 thread)..." >&2
"$PY" "$HERE/torch_fashion_mnist.py" --model mlp --batch-sizes "$BATCHES" \
    --threads 1 --json ${EXTRA[@]+"${EXTRA[@]}"} > "$TMP/torch.jsonl"

echo "Running Tandem ($TANDEM_BIN)..." >&2
"$TANDEM_BIN" --model mlp --batch-sizes "$BATCHES" --json \
    ${EXTRA[@]+"${EXTRA[@]}"} > "$TMP/tandem.jsonl"

"$PY" - "$TMP/tandem.jsonl" "$TMP/torch.jsonl" <<'EOF'
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
            if rec.get("peer") == peer and rec.get("model") == "mlp":
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
EOF
