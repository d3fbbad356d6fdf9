#!/usr/bin/env bash
# Installs what is missing, checks that includes between folders follow docs/architecture.md,
# builds Tandem and runs the whole test suite three times: optimised (with the CUDA backend where
# nvcc is found), under AddressSanitizer and UndefinedBehaviorSanitizer, and under ThreadSanitizer
# (both without CUDA). Exits non-zero on any failure. Tests that cannot run on this machine (no GPU,
# no MPI, running as root) are listed by ctest as skipped, with their reason in the log.
#
#   scripts/test.sh           the whole suite, three builds (as CI runs it)
#   scripts/test.sh --quick   the optimised build alone, for the edit-test loop
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
scripts/install-deps.sh
python3 scripts/check-includes.py  # folder dependencies follow docs/architecture.md
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
((quick)) && exit 0
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTANDEM_SANITIZE=ON >/dev/null
cmake --build build-asan -j2
# The pool stress runs 200000 jobs here: at ASan's speed the full million comes close to the
# stress's own 120 s hang bound on a loaded 2-core machine.
ASAN_OPTIONS=detect_leaks=1 TANDEM_STRESS_JOBS=200000 ctest --test-dir build-asan --output-on-failure -j2
# ThreadSanitizer: every test starts threads (device workers, pools, communication, prefetch).
# No suppressions: a report fails the test. The pool stress runs fewer jobs (TSan is ~10x slower).
# allocator_may_return_null: HDF5 reading a corrupt file asks malloc for absurd sizes and handles
# the null that glibc returns; TSan's allocator would abort instead.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Release -DTANDEM_TSAN=ON >/dev/null
cmake --build build-tsan -j2
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 allocator_may_return_null=1" TANDEM_STRESS_JOBS=10000 \
  ctest --test-dir build-tsan --output-on-failure -j2
