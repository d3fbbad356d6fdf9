#!/usr/bin/env bash
# MultiWorkerMirrored on this machine: 2 workers × 1 device (mpirun -np 2) against one process
# with Default on all cores, Fashion-MNIST MLP, samples/s of the second epoch, side by side; then
# Pipeline's 2 stages on the devices of 2 workers against the same 2 stages on 2 virtual devices
# of one process; then the all-reduce between the 2 processes against the in-process ring of 2
# threads.
#   bench/run_multiworker.sh [build/bench_multiworker]
set -euo pipefail
bench=${1:-build/bench_multiworker}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# side_by_side ONE TWO LABEL_ONE LABEL_TWO: samples/s of `train ONE` in one process and of
# `train TWO` under mpirun -np 2, per batch size, and their ratio.
side_by_side() {
  echo "| batch | $3: samples/s | $4: samples/s | ratio |"
  echo "|---|---|---|---|"
  for batch in 128 512; do
    one=$("$bench" train "$1" "$batch")
    two=$(mpirun -np 2 --bind-to none "$bench" train "$2" "$batch" | tail -1)
    echo "| $batch | $one | $two | $(python3 -c "print(f'{$two / $one:.2f}')") |"
  done
  echo
}
side_by_side default workers "1 process, Default" "2 workers x 1 device"
side_by_side pipeline spread "Pipeline, 2 stages in 1 process" "2 stages on 2 workers"
mpirun -np 2 --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo "$bench" allreduce
