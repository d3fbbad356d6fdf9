#!/usr/bin/env bash
# Strategies over the devices of several workers (distribute::across_workers) under mpirun, on
# this machine's loopback (TCP, as between machines). The model: an MLP with Dropout and four Dense
# layers, one epoch of 5 shuffled steps (the last batch partial), then evaluate and predict.
#   1. Each ends at one process's Default weights, metrics and predictions within 1e-5:
#      Pipeline with one stage per worker (2 and 4 workers, 4 oversubscribed; and 2 workers with 2
#      replicas per stage); a 2-stage pipeline whose stages are model-split over 2 devices (2 workers
#      × 2 devices: a stage per worker; 2 workers × 4 devices and 4 workers × 2: data × pipeline ×
#      model, 2 replicas); ModelSplit by placement across 2 and 4 workers, ModelSplit over a
#      2×2 mesh (batch × model) with the model axis within workers (2 workers × 2 devices) and
#      across them (4 workers × 1), and a "model" axis over 2 workers (each weight's blocks on both);
#      TensorParallel2D over a 2×2 mesh, its rows on 2 workers (2 × 2 devices) or on 4 (4 × 1);
#      Mirrored and MultiWorkerMirrored with sharded weights over 2 workers × 2 devices and 4 × 1.
#   2. A worker of a 2-stage pipeline killed mid-epoch, and one that stops answering: the other
#      exits non-zero within 60 s naming it; restarting both continues from BackupAndRestore's
#      backup and ends with the uninterrupted run's weights, bit for bit.
#
#   spread_workers_test.sh MPIRUN MULTIWORKER_CHILD RESUME_CHILD
set -euo pipefail
mpirun=$1 child=$2 resume=$3
source "$(dirname "$0")/mpi_common.sh"  # also makes $dir, removed at exit

echo "== 1. every strategy across workers equals Default"
"$child" deep "$dir/default.bin" >/dev/null
for run in "pipeline 2 1" "pipeline 4 1" "pipeline 2 2" "pipemodel 2 2" "pipemodel 2 4" "pipemodel 4 2" "split 2 1" "split 4 1" "mesh 2 2" \
  "mesh 4 1" "model 2 1" "tp2d 2 2" "tp2d 4 1" "sharded 2 2" "sharded 4 1" \
  "mwm-sharded 2 2" "mwm-sharded 4 1"; do
  read -r kind np local <<<"$run"
  out="$dir/$kind-$np-$local.bin"
  launch "$np" "$child" spread "$kind" "$local" "$out" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "$kind, $np workers x $local devices"; }
  echo -n "$kind, $np workers x $local devices: "
  "$child" compare "$dir/default.bin" "$out" 1e-5 || fail "$kind, $np workers x $local devices differs from Default"
done

echo "== 2. a lost worker stops the other; restarting both resumes exactly"
lost_worker_resumes spread_pipeline "$dir"
echo "PASSED"
