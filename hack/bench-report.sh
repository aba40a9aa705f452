#!/usr/bin/env bash
# bench-report.sh [benchreport flags]: runs every benchmark scenario side by
# side with client-go (each implementation in its own process), prints the
# table of ratios and writes bench/out/{table.md,results.csv,results.json,chart.svg}.
#
#   BENCH_N=10000,50000 hack/bench-report.sh   # without the 150k run
#   BENCH_REAL_N=0 hack/bench-report.sh        # no kube-apiserver part
#   BENCH_CONTAINER_N=0 hack/bench-report.sh   # no memory cgroups (the container scenario needs root)
#   BENCH_CACHECTL_N=0 hack/bench-report.sh    # no cachectl on a 300k-Pod file (scenario 10)
#   BENCH_UPGRADE_N=0 hack/bench-report.sh     # no upgrade of a 150k-Pod file (scenario 11)
#   BENCH_CHURN_N=0 hack/bench-report.sh       # no churn (scenario 14)
#   BENCH_MULTI_N=0 BENCH_MULTI_REAL_N=0 hack/bench-report.sh  # no 12 informers on one file (scenario 12)
#   BENCH_MILLION_N=0 hack/bench-report.sh     # no million ConfigMaps (scenario 13)
#   hack/bench-report.sh -only sync,container -profile bench/out/prof
#
# The kube-apiserver part needs bin/etcd and bin/kube-apiserver (make e2e-deps).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
mkdir -p bench/out
bin="$(mktemp -d)"
trap 'rm -rf "${bin}"' EXIT
go build -o "${bin}/benchreport" ./bench/cmd/benchreport
# The churn's slow disk sleeps at a failpoint: only a build with them has it.
go build -tags failpoints -o "${bin}/benchreport-failpoints" ./bench/cmd/benchreport
go build -o "${bin}/cachectl" ./cmd/cachectl
"${bin}/benchreport" -out bench/out -cachectl "${bin}/cachectl" -churn-slow-exe "${bin}/benchreport-failpoints" "$@" 2> >(grep --line-buffered -v '^[IW][0-9]\{4\} ' >&2)
