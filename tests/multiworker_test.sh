#!/usr/bin/env bash
# MultiWorkerMirrored under mpirun, on this machine's loopback (TCP, as between machines):
#   1. 2 and 4 workers (oversubscribed), with 1 and 2 virtual devices each, end one epoch of 5
#      steps with one process's Default weights, evaluate and predict results within 1e-5; the
#      same run twice gives the same bits; workers with unequal device counts are refused.
#   3. Streamed data (a Source read by decode threads): one process gives Default's bits; 2 workers
#      x 2 devices give the in-memory run's bits (and Default's within 1e-5), each worker reading
#      only its rows (the counts add up to the data set's 150, once).
#   2. A worker killed mid-epoch, and one that stops answering: the others exit non-zero within
#      60 s naming the lost worker; restarting all of them continues from BackupAndRestore's
#      backup and ends with the uninterrupted run's weights, bit for bit.
#
#   multiworker_test.sh MPIRUN MULTIWORKER_CHILD RESUME_CHILD
set -euo pipefail
mpirun=$1 child=$2 resume=$3
source "$(dirname "$0")/mpi_common.sh"  # also makes $dir, removed at exit

echo "== 1. every worker count and device count equals Default"
"$child" default "$dir/default.bin" >/dev/null
for np in 2 4; do
  for local in 1 2; do
    launch "$np" "$child" workers "$local" "$dir/w$np-$local.bin" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "$np workers x $local devices"; }
    echo -n "$np workers x $local devices: "
    "$child" compare "$dir/default.bin" "$dir/w$np-$local.bin" 1e-5 || fail "$np workers x $local devices differ from Default"
  done
done
launch 4 "$child" workers 2 "$dir/again.bin" >/dev/null 2>&1 || fail "second run of 4 workers x 2 devices"
cmp "$dir/w4-2.bin" "$dir/again.bin" || fail "the same run twice differs"
echo "the same run twice: identical"
status=0
launch 2 "$child" workers rank+1 "$dir/mismatch.bin" >"$dir/log" 2>&1 || status=$?
[[ $status -ne 0 ]] || fail "workers with 1 and 2 devices were accepted"
grep -q "every worker needs the same number of local devices, got 1, 2" "$dir/log" || { cat "$dir/log"; fail "no clear error for unequal device counts"; }
echo "unequal device counts: $(grep -o "MultiWorkerMirrored: every worker[^)]*)" "$dir/log" | head -1)"

echo "== 2. a lost worker stops the others; restarting all resumes exactly"
lost_worker_resumes multiworker "$dir"
echo "== 3. streamed data: each worker reads only its rows"
MULTIWORKER_CHILD_STREAMED=1 "$child" default "$dir/streamed.bin" >/dev/null
echo -n "streamed, one process: "
"$child" compare "$dir/default.bin" "$dir/streamed.bin" 0 || fail "streamed Default differs from in-memory Default"
MULTIWORKER_CHILD_STREAMED=1 launch 2 "$child" workers 2 "$dir/streamed-w2.bin" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "streamed, 2 workers"; }
echo -n "streamed, 2 workers x 2 devices: "
"$child" compare "$dir/default.bin" "$dir/streamed-w2.bin" 1e-5 || fail "streamed 2 workers differ from Default"
echo -n "streamed against in-memory, 2 workers x 2 devices: "
"$child" compare "$dir/w2-2.bin" "$dir/streamed-w2.bin" 0 || fail "streamed 2 workers differ from in-memory 2 workers"
reads=$(grep -o "worker [0-9] read [0-9]* training samples" "$dir/log" | sort)
echo "$reads"
total=$(awk '{s += $4} END {print s}' <<<"$reads")
[[ $(wc -l <<<"$reads") -eq 2 && $total -eq 150 ]] || fail "the workers read $total samples in all, expected 150 (each its own rows)"
echo "PASSED"
