#!/usr/bin/env bash
# Builds the release tools from the Go module proxy and caches each by version outside the
# repository (a `.complete` marker, written last, tells a finished build from an interrupted one):
#   release-tools/cosign/<COSIGN_VERSION>/cosign   signs and verifies (keyed, no transparency log)
#   release-tools/crane/<CRANE_VERSION>/crane      pushes OCI layouts, resolves tags, and serves
#                                                  the registry the tests push to on loopback
#
#   bash scripts/release/build-tools.sh        (npm run build:release-tools)
#
# Environment:
#   BUCKETOPERATOR_CACHE  cache root (default: $HOME/.cache/bucketoperator)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools.env
source "$here/tools.env"

log() { printf '[build:release-tools %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[build:release-tools] ERROR: %s\n' "$*" >&2; exit 1; }

cache_root="${BUCKETOPERATOR_CACHE:-$HOME/.cache/bucketoperator}"
root="$cache_root/release-tools"

# require_go <what>: fails with the fix unless Go >= 1.26 is installed.
require_go() {
  local what="$1" major minor
  command -v go >/dev/null 2>&1 ||
    die "$what is not cached in $root and Go is not installed: install Go >= 1.26 (https://go.dev/dl/) and run 'npm run build:release-tools' again"
  read -r major minor <<<"$(go env GOVERSION 2>/dev/null | sed -nE 's/^go([0-9]+)\.([0-9]+).*/\1 \2/p')"
  if [[ -z "${major:-}" ]] || ((major < 1 || (major == 1 && minor < 26))); then
    die "Go >= 1.26 is required to build $what (found: $(go env GOVERSION 2>/dev/null || echo unknown))"
  fi
}

# build <name> <version> <package> <ldflags>: `go install`s the package into the cache, once.
build() {
  local name="$1" version="$2" package="$3" ldflags="$4"
  local out="$root/$name/$version" stage="$root/$name/.stage-$version"
  [[ -f "$out/.complete" && -x "$out/$name" ]] && return 0
  require_go "$name $version"
  mkdir -p "$root/$name"
  exec 9>"$root/$name/.build.lock"
  if ! flock -n 9; then
    log "another build of $name holds $root/$name/.build.lock; waiting for it"
    flock 9
  fi
  # The build we waited for may have finished it.
  if [[ -f "$out/.complete" && -x "$out/$name" ]]; then
    exec 9>&-
    return 0
  fi
  local started=$SECONDS
  rm -rf "$stage"
  mkdir -p "$stage"
  log "building $name $version with $(go env GOVERSION)"
  GOWORK=off CGO_ENABLED=0 GOBIN="$stage" go install -trimpath -ldflags="$ldflags" "$package@$version"
  [[ -x "$stage/$name" ]] || die "go install $package@$version left no $stage/$name"
  mkdir -p "$out"
  mv -f "$stage/$name" "$out/$name"
  rm -rf "$stage"
  printf 'VERSION=%s\nBUILT_IN_SECONDS=%s\nGO_VERSION=%s\n' "$version" "$((SECONDS - started))" "$(go env GOVERSION)" >"$out/.complete"
  log "$name $version built in $((SECONDS - started))s: $out/$name"
  exec 9>&-
}

# The -X flags of each project's own Makefile, so `cosign version` and `crane version` report the
# release instead of "devel".
build cosign "$COSIGN_VERSION" github.com/sigstore/cosign/v2/cmd/cosign \
  "-s -w -buildid= -X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION -X sigs.k8s.io/release-utils/version.gitTreeState=clean"
build crane "$CRANE_VERSION" github.com/google/go-containerregistry/cmd/crane \
  "-s -w -buildid= -X github.com/google/go-containerregistry/cmd/crane/cmd.Version=$CRANE_VERSION"
