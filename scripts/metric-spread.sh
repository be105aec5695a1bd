#!/usr/bin/env bash
# How far one metric fans out: the source files outside tests that name it
# (test files, tests/ folders and inline `#[cfg(test)]` modules left out).
# Usage: scripts/metric-spread.sh ttfat   (case-insensitive)
set -euo pipefail
name="${1:?usage: scripts/metric-spread.sh METRIC}"
cd "$(dirname "$0")/.."
for f in $(git ls-files 'crates/*.rs' | grep -v -e '/tests/' -e 'tests\.rs$' -e '_tests\.rs$' -e '/benches/'); do
  # Code before the first `#[cfg(test)]` line (inline test modules sit last).
  # The name, not a longer word that starts with it (`TtftConnect` is not
  # `ttftc`). `grep -c`, not `grep -q`: `-q` stops reading at the first match, awk then
  # dies of SIGPIPE on a long file, and `pipefail` hides the match.
  if [ "$(awk '/^#\[cfg\(test\)\]/{exit} {print}' "$f" | grep -ciE -- "${name}([^a-z]|\$)")" != 0 ]; then
    echo "$f"
  fi
done | sort | tee /dev/stderr | wc -l
