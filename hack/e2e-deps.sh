#!/usr/bin/env bash
# e2e-deps.sh builds bin/etcd and bin/kube-apiserver from the Go module in
# hack/tools, for internal/testcluster. It rebuilds only when a binary is
# missing or when hack/tools (go.mod, go.sum, the main packages) or this
# script changed since the last build; bin/.e2e-deps.stamp records a hash of
# them.
#
# Usage: hack/e2e-deps.sh [-f]    (-f: rebuild even if up to date)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${root}/hack/tools"
bin="${root}/bin"
stamp="${bin}/.e2e-deps.stamp"
self="${root}/hack/$(basename "${BASH_SOURCE[0]}")"
go="${GO:-go}"

force=0
if [[ "${1:-}" == "-f" ]]; then
  force=1
fi

# The stamp covers everything that decides what the binaries are: the pinned
# versions, their checksums, our two main packages and this script.
sha256() {
  if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi
}
want="$(cd "${tools}" && cat go.mod go.sum etcd/main.go kube-apiserver/main.go "${self}" | sha256 | cut -d' ' -f1)"

if [[ "${force}" == 0 && -x "${bin}/etcd" && -x "${bin}/kube-apiserver" && -f "${stamp}" ]] &&
  [[ "$(cat "${stamp}")" == "${want}" ]]; then
  echo "e2e-deps: bin/etcd and bin/kube-apiserver are up to date"
  exit 0
fi

mkdir -p "${bin}"
rm -f "${stamp}"

# Build from the module proxy, never from a vendor directory or a workspace,
# so that a fresh clone with an empty module cache works the same way.
export GOFLAGS="-mod=mod -buildvcs=false"
export GOWORK=off
export CGO_ENABLED=0

version() {
  (cd "${tools}" && "${go}" list -m -f '{{.Version}}' "$1")
}

echo "e2e-deps: building etcd and kube-apiserver from hack/tools/go.mod;"
echo "e2e-deps: the first build downloads and compiles both: about 6 minutes on 2 idle cores, 15 on busy ones"
start=$(date +%s)

kube_version="$(version k8s.io/kubernetes)"
etcd_version="$(version go.etcd.io/etcd/server/v3)"
if [[ ! "${kube_version}" =~ ^v([0-9]+)\.([0-9]+)\. ]]; then
  echo "e2e-deps: cannot parse k8s.io/kubernetes version ${kube_version}" >&2
  exit 1
fi
major="${BASH_REMATCH[1]}"
minor="${BASH_REMATCH[2]}"

# kube-apiserver reports the version it was stamped with (upstream stamps it
# from git); without it, --version and /version say v0.0.0-master.
pkg=k8s.io/component-base/version
ldflags="-s -w"
ldflags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
ldflags+=" -X ${pkg}.gitVersion=${kube_version} -X ${pkg}.gitTreeState=clean"
ldflags+=" -X ${pkg}.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"

cd "${tools}"
# Build into temporary names and rename, so an interrupted build never leaves
# a half-written binary that looks up to date.
"${go}" build -trimpath -o "${bin}/etcd.tmp" ./etcd
mv -f "${bin}/etcd.tmp" "${bin}/etcd"
"${go}" build -trimpath -ldflags "${ldflags}" -o "${bin}/kube-apiserver.tmp" ./kube-apiserver
mv -f "${bin}/kube-apiserver.tmp" "${bin}/kube-apiserver"

echo "${want}" >"${stamp}"
echo "e2e-deps: built etcd ${etcd_version} and kube-apiserver ${kube_version} into bin/ in $(($(date +%s) - start))s"
