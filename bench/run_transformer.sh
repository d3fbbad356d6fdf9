#!/usr/bin/env bash
# Side-by-side Transformer training: Tandem vs PyTorch on the Transformer example's model at its
# batch size (64), as samples/s, their ratio, and memory: Tandem's planned arena for one step
# against PyTorch's peak resident-set growth over training.
#
# Usage: bench/run_transformer.sh PATH/TO/bench_transformer [--blocks N] [--steps S]
#
# PyTorch runs with 1 and with 2 threads and the faster counts (its fastest configuration here);
# Tandem uses both cores. Run on an otherwise idle machine; compare the ratio.
set -euo pipefail
TANDEM_BIN="${1:-}"
[[ -x "$TANDEM_BIN" ]] || { echo "usage: $0 PATH/TO/bench_transformer [--blocks N] [--steps S]" >&2; exit 2; }
shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
source "$HERE/peer_env.sh"
run_both "$HERE/torch_transformer.py" "$TANDEM_BIN" "$@"

"$PY" - "$tandem" "$torch1" "$torch2" <<'PYEOF'
import json, sys
t = json.loads(sys.argv[1])
p = max((json.loads(a) for a in sys.argv[2:]), key=lambda r: r["samples_per_s"])
print("| model | batch | Tandem samples/s (ms/step) | PyTorch samples/s (ms/step, threads) | ratio | Tandem planned arena | PyTorch peak RSS growth | memory ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
print(f"| Transformer, {t['blocks']} blocks | {t['batch']} | {t['samples_per_s']:,.0f} ({t['step_ms']:.1f}) | "
      f"{p['samples_per_s']:,.0f} ({p['step_ms']:.1f}, {p['threads']}) | {t['samples_per_s'] / p['samples_per_s']:.2f} | "
      f"{t['arena_mb']:.1f} MB | {p['peak_rss_growth_mb']:.1f} MB | {t['arena_mb'] / p['peak_rss_growth_mb']:.2f} |")
PYEOF
