#!/usr/bin/env bash
# scripts/check-includes.py on a copy of the tree: a forbidden include and a cycle in the table must
# each fail it with a message naming the problem.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fresh_copy() {
  rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/docs" "$tmp/tree/scripts"
  cp -r "$repo/src" "$repo/layers" "$repo/distribute" "$repo/io" "$repo/include" "$tmp/tree/"
  cp "$repo/docs/architecture.md" "$tmp/tree/docs/"
  cp "$repo/scripts/check-includes.py" "$tmp/tree/scripts/"
}
expect_failure() {  # expect_failure <what> <text the output must contain>
  set +e
  python3 "$tmp/tree/scripts/check-includes.py" >"$tmp/out" 2>&1
  local rc=$?
  set -e
  cat "$tmp/out"
  if [[ $rc -ne 1 ]]; then echo "FAIL: $1: expected exit status 1, got $rc"; exit 1; fi
  if ! grep -qF -- "$2" "$tmp/out"; then echo "FAIL: $1: expected a line containing: $2"; exit 1; fi
}

fresh_copy
printf '#pragma once\n\n#include "model/model_impl.h"\n' >"$tmp/tree/src/graph/forbidden.h"
expect_failure "graph including model" \
  'FORBIDDEN: src/graph/forbidden.h:3 includes "model/model_impl.h" (graph -> model; docs/architecture.md allows graph -> {'

fresh_copy
sed -i 's/^| graph | core, tandem |/| graph | model, core, tandem |/' "$tmp/tree/docs/architecture.md"
expect_failure "a cycle in the table" "the table permits a cycle: "
echo "PASS: check-includes catches a forbidden include and a cycle in the table"
