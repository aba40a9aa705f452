#!/usr/bin/env bash
# bench-compare.sh REF: runs bench/ at REF and in the work tree, five times
# each, and prints benchstat's comparison. benchstat comes from the Go
# module proxy (golang.org/x/perf).
set -euo pipefail
ref="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'git -C "${root}" worktree remove --force "${tmp}/ref" >/dev/null 2>&1 || true; rm -rf "${tmp}"' EXIT
git -C "${root}" worktree add --detach "${tmp}/ref" "${ref}" >/dev/null
bench=${BENCH:-.}
(cd "${tmp}/ref" && go test -run '^$' -bench "${bench}" -benchmem -count 5 ./bench/... | tee "${tmp}/old.txt")
(cd "${root}" && go test -run '^$' -bench "${bench}" -benchmem -count 5 ./bench/... | tee "${tmp}/new.txt")
go run golang.org/x/perf/cmd/benchstat@latest "${tmp}/old.txt" "${tmp}/new.txt"
