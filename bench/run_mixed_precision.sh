#!/usr/bin/env bash
# bfloat16 against float32 training throughput, Tandem and PyTorch side by side, for the
# Fashion-MNIST MLP (batch 128), the Fashion-MNIST CNN (batch 128) and the character Transformer
# (2 blocks, batch 64): four configurations per model —
#   Tandem float32, Tandem --policy mixed_bfloat16,
#   PyTorch float32, PyTorch --autocast bf16 (torch.autocast("cpu", dtype=torch.bfloat16) around
#   forward and loss; master weights, their gradients and Adam in float32) —
# and one markdown table of the median samples/s, with the ratios bf16 / float32 for each
# framework and Tandem / PyTorch at each precision.
#
# Usage: bench/run_mixed_precision.sh BUILD_DIR [--repeats N] [--models mlp,cnn,transformer]
#   BUILD_DIR holds bench_fashion_mnist and bench_transformer.
#
# The machine may be shared, so the four configurations run N times (default 5) in alternating
# order (A B C D, D C B A, A B C D, ...) and each cell is the median. Each runs in its fastest
# configuration on the two cores, in the environment of the other side-by-side scripts
# (bench/peer_env.sh; for the CNN OpenBLAS single-threaded, as bench/run_benchmark.sh does): Tandem
# on both cores; PyTorch with the thread count, 1 or 2, that was faster in a short probe of each
# configuration before the rounds (as bench/run_transformer.sh takes the faster count) — under
# load, PyTorch's two spinning OpenMP threads ran up to forty times slower than one here.
# A short timed part keeps the whole run near five minutes: half an epoch for the MLP, a tenth for
# the CNN, 20 steps for the Transformer (after the benchmarks' own untimed warm-up steps).
set -euo pipefail

usage() {
    echo "usage: $0 BUILD_DIR [--repeats N] [--models mlp,cnn,transformer]" >&2
    exit 2
}

BUILD="${1:-}"
[[ -n "$BUILD" && -d "$BUILD" ]] || usage
shift
REPEATS=5
MODELS=mlp,cnn,transformer
while [[ $# -gt 0 ]]; do
    case "$1" in
        --repeats) [[ $# -ge 2 ]] || usage; REPEATS="$2"; shift ;;
        --models) [[ $# -ge 2 ]] || usage; MODELS="$2"; shift ;;
        *) usage ;;
    esac
    shift
done
for bin in bench_fashion_mnist bench_transformer; do
    [[ -x "$BUILD/$bin" ]] || { echo "not an executable: $BUILD/$bin" >&2; exit 1; }
done

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
source "$HERE/peer_env.sh"

exec "$PY" - "$HERE" "$BUILD" "$REPEATS" "$MODELS" <<'PYEOF'
import json
import os
import statistics
import subprocess
import sys
import time

here, build, repeats, models = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
PY = "/usr/bin/python3"

# Per model: batch, the Tandem and PyTorch commands (without precision or threads), the PyTorch
# arguments of the thread-count probe (a short timed part) and extra environment. The CNN's
# OpenBLAS is single-threaded as in bench/run_benchmark.sh.
MODELS = {
    "mlp": dict(label="Fashion-MNIST MLP", batch=128, env={},
                tandem=[f"{build}/bench_fashion_mnist", "--model", "mlp", "--batch-sizes", "128", "--epochs-fraction", "0.5"],
                torch=[PY, f"{here}/torch_fashion_mnist.py", "--model", "mlp", "--batch-sizes", "128", "--epochs-fraction", "0.5"],
                probe=["--epochs-fraction", "0.05"]),
    "cnn": dict(label="Fashion-MNIST CNN", batch=128, env={"OPENBLAS_NUM_THREADS": "1"},
                tandem=[f"{build}/bench_fashion_mnist", "--model", "cnn", "--batch-sizes", "128", "--epochs-fraction", "0.1"],
                torch=[PY, f"{here}/torch_fashion_mnist.py", "--model", "cnn", "--batch-sizes", "128", "--epochs-fraction", "0.1"],
                probe=["--epochs-fraction", "0.01"]),
    "transformer": dict(label="character Transformer, 2 blocks", batch=64, env={},
                        tandem=[f"{build}/bench_transformer", "--steps", "20"],
                        torch=[PY, f"{here}/torch_transformer.py", "--steps", "20"],
                        probe=["--steps", "3"]),
}
CONFIGS = [("tandem", "float32"), ("tandem", "bf16"), ("torch", "float32"), ("torch", "bf16")]
for m in models:
    if m not in MODELS:
        sys.exit(f"unknown model {m!r} (expected mlp, cnn, transformer)")


def run(cmd, env):
    out = subprocess.run(cmd, env={**os.environ, **env}, check=True, capture_output=True, text=True).stdout
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def once(spec, peer, precision, threads=0, probe=False):
    if peer == "tandem":
        cmd = spec["tandem"] + ["--policy", "mixed_bfloat16" if precision == "bf16" else "float32", "--json"]
    else:
        cmd = spec["torch"] + (spec["probe"] if probe else []) + ["--threads", str(threads), "--json"]
        cmd += ["--autocast", "bf16"] if precision == "bf16" else []
    return run(cmd, spec["env"])["samples_per_s"]


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


load_before, started = loadavg(), time.time()
print(f"load before: {load_before}", file=sys.stderr)
results = {}  # (model, peer, precision) -> [samples/s per round]
torch_threads = {}  # (model, precision) -> the faster count in the probe
for m in models:
    spec = MODELS[m]
    for precision in ("float32", "bf16"):
        probe = {t: once(spec, "torch", precision, t, probe=True) for t in (1, 2)}
        torch_threads[(m, precision)] = max(probe, key=probe.get)
        print(f"{m} probe: torch {precision} " + ", ".join(f"{t} threads {v:,.0f}" for t, v in probe.items()), file=sys.stderr)
    for r in range(repeats):
        order = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
        for peer, precision in order:
            key = (m, peer, precision)
            value = once(spec, peer, precision, torch_threads[(m, precision)])
            results.setdefault(key, []).append(value)
            print(f"{m} round {r + 1}: {peer} {precision} {value:,.0f} samples/s", file=sys.stderr)
load_after = loadavg()
print(f"load after: {load_after} ({time.time() - started:.0f} s)", file=sys.stderr)

med = {k: statistics.median(v) for k, v in results.items()}
print(f"Median samples/s of {repeats} alternating rounds; load average (1, 5, 15 min) {load_before} before, "
      f"{load_after} after; {time.time() - started:.0f} s in all.")
print()
print("| model (batch) | Tandem float32 | Tandem mixed_bfloat16 | Tandem bf16 / f32 | PyTorch float32 (threads) "
      "| PyTorch autocast bf16 (threads) | PyTorch bf16 / f32 | Tandem / PyTorch, f32 | Tandem / PyTorch, bf16 |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for m in models:
    t32, tbf = med[(m, "tandem", "float32")], med[(m, "tandem", "bf16")]
    p32, pbf = med[(m, "torch", "float32")], med[(m, "torch", "bf16")]
    print(f"| {MODELS[m]['label']} ({MODELS[m]['batch']}) | {t32:,.0f} | {tbf:,.0f} | {tbf / t32:.2f} "
          f"| {p32:,.0f} ({torch_threads[(m, 'float32')]}) | {pbf:,.0f} ({torch_threads[(m, 'bf16')]}) | {pbf / p32:.2f} "
          f"| {t32 / p32:.2f} | {tbf / pbf:.2f} |")
print()
print("Each round's samples/s:")
print()
for (m, peer, precision), values in results.items():
    print(f"- {m}, {peer} {precision}: {', '.join(f'{v:,.0f}' for v in values)}")
PYEOF
