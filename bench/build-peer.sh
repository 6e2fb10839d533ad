#!/usr/bin/env bash
# Builds a Go peer operator (by default ../shared/peers/seed-go, the controller-runtime
# BucketOperator) for side-by-side benchmarks, the way its README says, and caches the binary
# by a hash of its sources outside the repository. Prints the binary's path as the last line.
#
#   bash bench/build-peer.sh [DIR]         (npm run bench -- --peer-build DIR does this)
#
# Needs Go >= 1.26 and the module proxy (go.sum is the peer's own). Nothing of it is part of
# `npm test`: without a peer, bench/ measures ours alone.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$(cd "${1:-$repo/../shared/peers/seed-go}" && pwd)"
cache_root="${BUCKETOPERATOR_CACHE:-$HOME/.cache/bucketoperator}"

log() { printf '[build-peer %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

[[ -f "$src/go.mod" ]] || { echo "[build-peer] ERROR: $src holds no go.mod" >&2; exit 1; }
command -v go >/dev/null || { echo "[build-peer] ERROR: Go is not installed (the peer needs Go >= 1.26)" >&2; exit 1; }
hash="$( { go env GOVERSION; cd "$src" && find . -name '*.go' -o -name 'go.mod' -o -name 'go.sum' | LC_ALL=C sort | xargs sha256sum; } | sha256sum | cut -c1-16)"
out="$cache_root/peer/$(basename "$src")-$hash"
if [[ -x "$out/operator" ]]; then
  log "cached: $out/operator"
  echo "$out/operator"
  exit 0
fi
mkdir -p "$out"
# A copy, so the build writes nothing into the peer's directory (go mod tidy may touch go.sum).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
log "building $src with $(go env GOVERSION)"
(cd "$work" && go mod tidy && CGO_ENABLED=0 go build -o "$out/operator.tmp" .)
mv "$out/operator.tmp" "$out/operator"
log "built $out/operator"
echo "$out/operator"
