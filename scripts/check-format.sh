#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks that the project's C++ sources follow .clang-format (Debian 12's clang-format 14): prints
# the files that differ and exits 1, changing nothing. `scripts/check-format.sh --fix` rewrites them.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
  echo "check-format: clang-format not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files -- 'include/*.hpp' 'src/*.cpp' 'tests/*.cpp' 'tests/*.hpp' 'tools/*.cpp' \
  'tools/*.hpp' 'examples/*.cpp' 'examples/*.hpp' 'examples/*.cu' 'benchmarks/*.cpp' |
  grep -v '^tests/support/catch.hpp$')
if [ "${1:-}" = "--fix" ]; then
  "$cf" -i --style=file "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if ((${#bad[@]})); then
  printf 'check-format: not formatted per .clang-format (run scripts/check-format.sh --fix): %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted per .clang-format"
