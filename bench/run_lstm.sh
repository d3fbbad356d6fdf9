#!/usr/bin/env bash
# Side-by-side LSTM training: Tandem vs PyTorch (nn.LSTM) on a character-level language model,
# Embedding(96, 64) → LSTM(256, return_sequences) → Dense(96), batch 64 of 64-token windows, as
# samples/s and their ratio.
#
# Usage: bench/run_lstm.sh PATH/TO/bench_lstm [--units U] [--steps S]
#
# PyTorch runs with 1 and with 2 threads and the faster counts (its fastest configuration here);
# Tandem uses both cores. Run on an otherwise idle machine; compare the ratio.
set -euo pipefail
TANDEM_BIN="${1:-}"
[[ -x "$TANDEM_BIN" ]] || { echo "usage: $0 PATH/TO/bench_lstm [--units U] [--steps S]" >&2; exit 2; }
shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
source "$HERE/peer_env.sh"
run_both "$HERE/torch_lstm.py" "$TANDEM_BIN" "$@"

"$PY" - "$tandem" "$torch1" "$torch2" <<'PYEOF'
import json, sys
t = json.loads(sys.argv[1])
p = max((json.loads(a) for a in sys.argv[2:]), key=lambda r: r["samples_per_s"])
print("| model | batch | Tandem samples/s (ms/step) | PyTorch samples/s (ms/step, threads) | ratio |")
print("|---|---:|---:|---:|---:|")
print(f"| LSTM({t['units']}), 64 steps | {t['batch']} | {t['samples_per_s']:,.0f} ({t['step_ms']:.1f}) | "
      f"{p['samples_per_s']:,.0f} ({p['step_ms']:.1f}, {p['threads']}) | {t['samples_per_s'] / p['samples_per_s']:.2f} |")
PYEOF
