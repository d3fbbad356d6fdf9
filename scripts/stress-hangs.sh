#!/usr/bin/env bash
# Trains under pressure and counts hangs: the Fashion-MNIST MLP example N times and a 2-device
# Mirrored fit with more pool threads than cores (TANDEM_NUM_THREADS=4) N times, each with two
# busy loops running beside it. A run that outlives its time limit counts as a hang. Every MLP run
# must print the same weights fingerprint (same seed, same device: bitwise-identical weights); every
# Mirrored run must equal single-device training (the test checks it).
#
# Usage: scripts/stress-hangs.sh [N [M]]   (N MLP runs, default 50; M Mirrored runs, default N;
# run after building into build/)
set -uo pipefail
cd "$(dirname "$0")/.."
N="${1:-50}"
M="${2:-$N}"
MLP=build/fashion_mnist_mlp
TESTS=build/test_threads
for bin in "$MLP" "$TESTS"; do
  [[ -x "$bin" ]] || { echo "missing $bin: build first (cmake --build build -j2)" >&2; exit 2; }
done

busy_pids=()
start_busy() { for _ in 1 2; do sh -c 'while :; do :; done' & busy_pids+=($!); done; }
stop_busy() { ((${#busy_pids[@]})) && kill "${busy_pids[@]}" 2>/dev/null; wait "${busy_pids[@]}" 2>/dev/null; busy_pids=(); }
trap stop_busy EXIT

TMP="$(mktemp -d)"
mlp_hangs=0 mlp_failed=0 mlp_wrong=0 reference=""
for ((i = 1; i <= N; i++)); do
  start_busy
  timeout 300 "$MLP" > "$TMP/mlp.log" 2>&1
  rc=$?
  stop_busy
  fp="$(sed -n 's/^weights fingerprint: //p' "$TMP/mlp.log")"
  if ((rc == 124)); then mlp_hangs=$((mlp_hangs + 1)); echo "MLP run $i: HANG (killed after 300 s)"
  elif ((rc != 0)); then mlp_failed=$((mlp_failed + 1)); echo "MLP run $i: exit $rc"; tail -5 "$TMP/mlp.log"
  else
    [[ -z "$reference" ]] && reference="$fp"
    if [[ "$fp" != "$reference" ]]; then mlp_wrong=$((mlp_wrong + 1)); echo "MLP run $i: weights fingerprint $fp, expected $reference"; fi
    echo "MLP run $i: ok, $(grep '^test accuracy' "$TMP/mlp.log"), fingerprint $fp"
  fi
done

mirrored_hangs=0 mirrored_failed=0
for ((i = 1; i <= M; i++)); do
  start_busy
  TANDEM_NUM_THREADS=4 timeout 300 "$TESTS" -tc="mirrored fit with more pool threads than cores*" > "$TMP/mirrored.log" 2>&1
  rc=$?
  stop_busy
  if ((rc == 124)); then mirrored_hangs=$((mirrored_hangs + 1)); echo "Mirrored run $i: HANG (killed after 300 s)"
  elif ((rc != 0)); then mirrored_failed=$((mirrored_failed + 1)); echo "Mirrored run $i: exit $rc"; tail -20 "$TMP/mirrored.log"
  else echo "Mirrored run $i: ok, weights equal single-device training"; fi
done
rm -rf "$TMP"

echo
echo "MLP example:   $N runs, $mlp_hangs hangs, $mlp_failed failed, $mlp_wrong with other weights (fingerprint $reference)"
echo "Mirrored fit:  $M runs, $mirrored_hangs hangs, $mirrored_failed failed or with other weights"
((mlp_hangs + mlp_failed + mlp_wrong + mirrored_hangs + mirrored_failed == 0))
