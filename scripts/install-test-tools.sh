#!/usr/bin/env bash
# Installs the tools the unit tests run for real, into the cache beside the control plane:
#   lua5.1    Debian's Lua 5.1 (Argo CD runs health.lua on gopher-lua, Lua 5.1 semantics)
#   promtool  from Debian's prometheus package (`check rules`, `test rules`)
#   celeval   test/support/celeval built with cel-go (Flux evaluates healthCheckExprs with it)
#   tmux      Debian's tmux, the terminal the kubectl plugin's end-to-end test draws its tree in
#   actionlint  test/support/actionlint's pinned rhysd/actionlint, built from the Go module proxy
#               (checks examples/ci's GitHub Actions workflow)
#   shellcheck  Debian's shellcheck, which actionlint runs on every `run:` script it finds on PATH
#
#   bash scripts/install-test-tools.sh        (run by `npm run test:unit`)
#
# Idempotent and quick when everything is present. Debian packages are unpacked with
# `dpkg-deb -x`, never installed: no maintainer scripts run (prometheus's would start a
# service) and no dpkg lock is taken. Downloading them needs apt's package lists, which a
# fresh machine gets from `apt-get update` (root; CI runs as root).
#
# Environment:
#   BUCKETOPERATOR_CACHE  cache root (default: $HOME/.cache/bucketoperator); tools go to
#                         $BUCKETOPERATOR_CACHE/tools/
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache_root="${BUCKETOPERATOR_CACHE:-$HOME/.cache/bucketoperator}"
tools="$cache_root/tools"
bin="$tools/bin"

log() { printf '[install-test-tools %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[install-test-tools] ERROR: %s\n' "$*" >&2; exit 1; }

mkdir -p "$bin"
exec 9>"$tools/.install.lock"
flock 9

# Unpacks the named Debian packages (the candidate versions) into $1.
unpack_debs() {
  local dest="$1"; shift
  local work
  work="$(mktemp -d)"
  # apt drops privileges to _apt for downloads; let it write here.
  chmod 0777 "$work"
  if ! (cd "$work" && apt-get download -q "$@" >"$work/download.log" 2>&1); then
    # A fresh machine has no package lists yet.
    [[ "$(id -u)" == 0 ]] || { cat "$work/download.log" >&2; die "apt-get download $* failed; run 'apt-get update' as root, then this script again"; }
    log "apt-get update (apt-get download $* failed without it)"
    apt-get update -qq >/dev/null
    (cd "$work" && apt-get download -q "$@" >"$work/download.log" 2>&1) ||
      { cat "$work/download.log" >&2; die "apt-get download $* failed"; }
  fi
  rm -rf "$dest.tmp"
  mkdir -p "$dest.tmp"
  local deb
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$dest.tmp"; done
  rm -rf "$dest" "$work"
  mv "$dest.tmp" "$dest"
}

# Lua 5.1: the binary plus its shared library, run through a wrapper that finds the library.
if ! "$bin/lua5.1" -e 'return' >/dev/null 2>&1; then
  started=$SECONDS
  unpack_debs "$tools/lua5.1" lua5.1 liblua5.1-0
  libdir="$(dirname "$(find "$tools/lua5.1" -name 'liblua5.1.so.0*' | head -n 1)")"
  cat >"$bin/lua5.1" <<WRAPPER
#!/bin/sh
LD_LIBRARY_PATH="$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$tools/lua5.1/usr/bin/lua5.1" "\$@"
WRAPPER
  chmod +x "$bin/lua5.1"
  "$bin/lua5.1" -v >/dev/null 2>&1 || die "the unpacked lua5.1 does not run"
  log "lua5.1 ready in $((SECONDS - started))s"
fi

# promtool: Debian's build takes seconds to fetch; building it from the Go module proxy takes
# minutes of CPU on 2 cores for the same checks.
if ! "$bin/promtool" --version >/dev/null 2>&1; then
  started=$SECONDS
  unpack_debs "$tools/prometheus" prometheus
  ln -sf "$tools/prometheus/usr/bin/promtool" "$bin/promtool"
  "$bin/promtool" --version >/dev/null 2>&1 || die "the unpacked promtool does not run"
  log "promtool ready in $((SECONDS - started))s"
fi

# tmux: a real terminal for `kubectl bucket trace --watch` (test/integration/cli.test.ts); its two
# libraries besides libc and libtinfo come unpacked with it, found through the wrapper.
if ! "$bin/tmux" -V >/dev/null 2>&1; then
  started=$SECONDS
  unpack_debs "$tools/tmux" tmux libevent-core-2.1-7 libutempter0
  libdirs="$(find "$tools/tmux" -name '*.so*' -printf '%h\n' | sort -u | tr '\n' ':')"
  cat >"$bin/tmux" <<WRAPPER
#!/bin/sh
LD_LIBRARY_PATH="${libdirs%:}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$tools/tmux/usr/bin/tmux" "\$@"
WRAPPER
  chmod +x "$bin/tmux"
  "$bin/tmux" -V >/dev/null 2>&1 || die "the unpacked tmux does not run"
  log "tmux ready in $((SECONDS - started))s"
fi

# celeval: keyed by a hash of its sources, so an edit rebuilds it (test/support/test-tools.ts
# computes the same key).
src="$repo/test/support/celeval"
key="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)"
celeval="$tools/celeval/$key/celeval"
if [[ ! -x "$celeval" ]]; then
  command -v go >/dev/null 2>&1 || die "Go is needed to build $src (it is needed for the control plane too)"
  started=$SECONDS
  log "building celeval (cel-go) into $celeval"
  mkdir -p "$(dirname "$celeval")"
  (cd "$src" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -o "$celeval.tmp" .)
  mv "$celeval.tmp" "$celeval"
  log "celeval ready in $((SECONDS - started))s"
fi

# actionlint: built from the version test/support/actionlint/go.mod pins, and cached by that
# version (test/support/test-tools.ts reads the same line).
src="$repo/test/support/actionlint"
version="$(sed -nE 's|^[[:space:]]*github.com/rhysd/actionlint (v[^ ]+).*|\1|p' "$src/go.mod")"
[[ -n "$version" ]] || die "$src/go.mod requires no github.com/rhysd/actionlint version"
actionlint="$tools/actionlint/$version/actionlint"
if [[ ! -x "$actionlint" ]]; then
  command -v go >/dev/null 2>&1 || die "Go is needed to build actionlint (it is needed for the control plane too)"
  started=$SECONDS
  log "building actionlint $version into $actionlint"
  mkdir -p "$(dirname "$actionlint")"
  (cd "$src" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -o "$actionlint.tmp" github.com/rhysd/actionlint/cmd/actionlint)
  mv "$actionlint.tmp" "$actionlint"
  log "actionlint ready in $((SECONDS - started))s"
fi

# shellcheck: Debian's build is dynamically linked to libffi and libgmp, which are unpacked beside it and
# found through the wrapper, as tmux's libraries are.
if ! "$bin/shellcheck" --version >/dev/null 2>&1; then
  started=$SECONDS
  unpack_debs "$tools/shellcheck" shellcheck libffi8 libgmp10
  libdirs="$(find "$tools/shellcheck" -name '*.so*' -printf '%h\n' | sort -u | tr '\n' ':')"
  cat >"$bin/shellcheck" <<WRAPPER
#!/bin/sh
LD_LIBRARY_PATH="${libdirs%:}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$tools/shellcheck/usr/bin/shellcheck" "\$@"
WRAPPER
  chmod +x "$bin/shellcheck"
  "$bin/shellcheck" --version >/dev/null 2>&1 || die "the unpacked shellcheck does not run"
  log "shellcheck ready in $((SECONDS - started))s"
fi

# cert-manager's CRDs, from the release test/support/cert-manager/version pins (its Go module
# carries them in deploy/crds); test/support/test-tools.ts reads the same file.
version="$(tr -d '[:space:]' <"$repo/test/support/cert-manager/version")"
[[ -n "$version" ]] || die "test/support/cert-manager/version is empty"
crds="$tools/cert-manager-crds/$version"
if [[ ! -f "$crds/.complete" ]]; then
  command -v go >/dev/null 2>&1 || die "Go is needed to fetch cert-manager's CRDs (it is needed for the control plane too)"
  started=$SECONDS
  log "fetching cert-manager $version CRDs from the Go module proxy"
  dir="$(cd "$(mktemp -d)" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "github.com/cert-manager/cert-manager@$version" | sed -nE 's|^[[:space:]]*"Dir": "(.*)",?$|\1|p')"
  [[ -d "$dir/deploy/crds" ]] || die "github.com/cert-manager/cert-manager@$version has no deploy/crds"
  rm -rf "$crds" && mkdir -p "$crds"
  for kind in certificates issuers clusterissuers certificaterequests; do
    cp "$dir/deploy/crds/cert-manager.io_$kind.yaml" "$crds/"
  done
  touch "$crds/.complete"
  log "cert-manager CRDs ready in $((SECONDS - started))s"
fi
