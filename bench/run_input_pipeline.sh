#!/usr/bin/env bash
# Side-by-side input pipelines: images/s decoded and augmented (horizontal flip, crop of the image
# padded by 2) by Tandem's streaming pipeline (image_folder_source, 1 and 2 decode threads) and by
# PyTorch's DataLoader (its best num_workers of 0, 1, 2, with 1 and 2 intra-op threads), over the
# same folder of Fashion-MNIST PNG files; then the CNN's training throughput from those files
# against from memory.
#
# Usage: bench/run_input_pipeline.sh PATH/TO/bench_input_pipeline [--images N] [--size S] [--folder DIR]
#
# The folder (default: $TMPDIR/tandem-bench-images-N-S) is written once by bench/make_image_folder.py
# and reused. Run on an otherwise idle machine; compare the ratios.
set -euo pipefail
TANDEM_BIN="${1:-}"
[[ -x "$TANDEM_BIN" ]] || { echo "usage: $0 PATH/TO/bench_input_pipeline [--images N] [--size S] [--folder DIR]" >&2; exit 2; }
shift
IMAGES=20000 SIZE=28 FOLDER=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --images) IMAGES="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --folder) FOLDER="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
FOLDER="${FOLDER:-${TMPDIR:-/tmp}/tandem-bench-images-$IMAGES-$SIZE}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
source "$HERE/peer_env.sh"

if [[ ! -f "$FOLDER/.complete" ]]; then
    rm -rf "$FOLDER"
    "$PY" "$HERE/make_image_folder.py" "$FOLDER" --images "$IMAGES" --size "$SIZE" >&2
    touch "$FOLDER/.complete"
fi

echo "load before the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
torch1=$("$PY" "$HERE/torch_input_pipeline.py" "$FOLDER" --threads 1 --json)
torch2=$("$PY" "$HERE/torch_input_pipeline.py" "$FOLDER" --threads 2 --json)
tandem1=$("$TANDEM_BIN" "$FOLDER" --size "$SIZE" --threads 1 --json)
tandem2=$("$TANDEM_BIN" "$FOLDER" --size "$SIZE" --threads 2 --json)
train=$("$TANDEM_BIN" "$FOLDER" --size "$SIZE" --mode train --repeats 15 --json)  # short runs: 15 pairs for a steady median
echo "load after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$PY" - "$tandem1" "$tandem2" "$torch1" "$torch2" "$train" <<'PYEOF'
import json, sys
t1, t2, p1, p2, tr = (json.loads(a) for a in sys.argv[1:])
print(f"{t1['images']} PNG images, batch {t1['batch']}, random horizontal flip + crop with padding 2, shuffled")
print(f"Tandem: {t1['measured']}; PyTorch: DataLoader")
print()
print("| threads | Tandem images/s | PyTorch images/s (best num_workers) | ratio |")
print("|---:|---:|---:|---:|")
for t, p in ((t1, p1), (t2, p2)):
    tries = ", ".join(f"{w}: {r:,.0f}" for w, r in p["all_workers"].items())
    print(f"| {t['threads']} | {t['images_per_s']:,.0f} | {p['images_per_s']:,.0f} (num_workers={p['workers']}; {tries}) | "
          f"{t['images_per_s'] / p['images_per_s']:.2f} |")
print()
print("| CNN training, batch %d | samples/s |" % tr["batch"])
print("|---|---:|")
print(f"| from the PNG files (image_folder_source, AUTOTUNE) | {tr['files_samples_per_s']:,.0f} |")
print(f"| from memory (image_dataset_from_directory) | {tr['memory_samples_per_s']:,.0f} |")
print(f"| ratio files / memory (median of {tr['repeats']} alternating pairs: {', '.join(f'{r:.2f}' for r in tr['ratios'])}) | {tr['ratio']:.2f} |")
PYEOF
