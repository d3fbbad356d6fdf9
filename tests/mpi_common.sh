# Sourced by the tests that start workers with mpirun ($mpirun): $dir, a folder for the test's
# files; launch NP ARGS... starts NP processes on this machine's loopback (TCP, the transport a
# cluster uses); fail prints and exits.
dir=$(mktemp -d)  # the test's files
trap 'rm -rf "$dir"' EXIT
# mpirun refuses root unless told; containers often run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
launch() {
  local np=$1
  shift
  "$mpirun" -np "$np" --oversubscribe --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "$@"
}
fail() {
  echo "FAILED: $*"
  exit 1
}
# lost_worker_resumes STRATEGY DIR: under RESUME_CHILD_STRATEGY=STRATEGY, 2 workers of resume_child
# ($resume), worker 1 killed (then stopped) mid-epoch: the other exits non-zero within 60 s naming
# it, and restarting both continues from BackupAndRestore's backup to the uninterrupted run's bits.
lost_worker_resumes() {
  local dir=$2 how start status took pattern
  export RESUME_CHILD_STRATEGY=$1
  launch 2 "$resume" "$dir/backup-full" "$dir/full.out" >/dev/null 2>&1 || fail "$1: uninterrupted run"
  for how in kill stop; do
    start=$(date +%s)
    status=0
    RESUME_CHILD_STOP_WORKER=1 RESUME_CHILD_STOP_HOW=$how RESUME_CHILD_TIMEOUT_MS=8000 \
      launch 2 "$resume" "$dir/backup-$how" "$dir/$how.out" 40 >"$dir/log" 2>&1 || status=$?
    took=$(($(date +%s) - start))
    [[ $status -ne 0 ]] || { cat "$dir/log"; fail "$1, $how: the job exited 0"; }
    ((took <= 60)) || fail "$1, $how: the others took $took s to stop"
    # The message naming the lost worker: mpirun's for a killed process, Tandem's for a silent one.
    if [[ $how == kill ]]; then pattern="rank 1 .* exited on signal 9"; else pattern="No answer from worker 1"; fi
    grep -q "$pattern" "$dir/log" || { cat "$dir/log"; fail "$1, $how: no message naming worker 1"; }
    echo "$1, $how: exit $status after $took s: $(grep -o "$pattern[^.]*" "$dir/log" | head -1)"
    [[ -e "$dir/backup-$how" ]] || fail "$1, $how: no backup was written"
    launch 2 "$resume" "$dir/backup-$how" "$dir/$how.out" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "$1, $how: restart"; }
    cmp "$dir/full.out" "$dir/$how.out" || fail "$1, $how: the resumed run differs from the uninterrupted one"
    echo "$1, $how: restarted run identical to the uninterrupted one"
  done
  unset RESUME_CHILD_STRATEGY
}
