#!/usr/bin/env bash
# dist.sh VERSION "os/arch ..." DISTDIR RELEASE_URL
# Builds kubectl-cache for each platform into DISTDIR/kubectl-cache_VERSION_OS_ARCH.tar.gz
# and writes DISTDIR/cache.yaml: plugins/cache.yaml with VERSION filled in
# and one krew platform entry (selector, uri, sha256, bin) per archive.
set -euo pipefail
version=$1 platforms=$2 dist=$3 url=$4
cd "$(dirname "$0")/.."
mkdir -p "$dist"
manifest="$dist/cache.yaml"
sed "s/{{VERSION}}/$version/g" plugins/cache.yaml > "$manifest.tmp"
for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  name="kubectl-cache_${version}_${os}_${arch}"
  work=$(mktemp -d)
  # Static binaries by default (CGO_ENABLED=0), as krew plugins ship.
  GOOS=$os GOARCH=$arch CGO_ENABLED=${CGO_ENABLED:-0} ${GO:-go} build -ldflags "-X main.version=$version" -o "$work/kubectl-cache" ./cmd/cachectl
  cp README.md "$work/"
  tar -czf "$dist/$name.tar.gz" -C "$work" kubectl-cache README.md
  rm -rf "$work"
  sum=$(sha256sum "$dist/$name.tar.gz" | cut -d' ' -f1)
  cat >> "$manifest.tmp" <<ENTRY
  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $url/$name.tar.gz
    sha256: $sum
    bin: kubectl-cache
ENTRY
  echo "dist: $dist/$name.tar.gz"
done
mv "$manifest.tmp" "$manifest"
echo "dist: $manifest"
