#!/usr/bin/env bash
# Builds the operator image's /app into a local directory, step for step as operator/Dockerfile
# builds it, so the end-to-end tests and benchmarks run exactly what ships:
#   1. production node_modules: `npm ci $IMAGE_NPM_CI_FLAGS` from package.json + package-lock.json
#   2. the compiled operator: `tsc $IMAGE_TSC_ARGS`, its operator/ output tree
#   3. package.json beside them (Node reads its "type" to load the compiled modules)
# The lists live in scripts/image.env; a unit test holds the Dockerfile to the same lists.
#
#   bash scripts/build-image.sh        (npm run build:image)
#
# Each step is skipped when its stamp matches: step 1 hashes package.json, package-lock.json,
# the Node version and the npm flags; step 2 also hashes every compiler input (tsconfig files
# and all of operator/, which is all tsc compiles: a unit test keeps operator/ from importing
# anything outside it) and this script. A warm run costs one hash. Runs are serialised with
# flock, so parallel test runs share one build instead of racing.
#
# Environment:
#   BUCKETOPERATOR_IMAGE_DIR  output directory (default: $BUCKETOPERATOR_CACHE/image/<worktree>-<hash>)
#   BUCKETOPERATOR_CACHE      cache root (default: $HOME/.cache/bucketoperator)
#
# The default is outside the repository on purpose: Node resolves a package by walking up
# every parent's node_modules, so an image directory inside the checkout would silently load
# dev dependencies from the checkout's node_modules and hide a missing production one.
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
deps_stamp="$( { node --version; echo "$IMAGE_NPM_CI_FLAGS"; hash_paths package.json package-lock.json; } | sha256sum | cut -d' ' -f1)"
# shellcheck disable=SC2086 # the inputs are a word list
build_stamp="$( { echo "$deps_stamp"; echo "$IMAGE_TSC_ARGS"; hash_paths $IMAGE_BUILD_INPUTS scripts/build-image.sh scripts/image.env; } | sha256sum | cut -d' ' -f1)"

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

if [[ "$(cat "$out/.deps-stamp" 2>/dev/null)" == "$deps_stamp" ]]; then
  log "production dependencies unchanged (stamp ${deps_stamp:0:12}): npm ci skipped"
else
  log "production dependencies: npm ci $IMAGE_NPM_CI_FLAGS (from the npm cache when it has them)"
  rm -f "$out/.deps-stamp"
  mkdir "$work/deps"
  cp "$repo/package.json" "$repo/package-lock.json" "$work/deps/"
  t=$SECONDS
  # --prefer-offline only says where tarballs come from; the lockfile's integrity fixes what.
  # shellcheck disable=SC2086 # the flags are a word list
  (cd "$work/deps" && npm ci $IMAGE_NPM_CI_FLAGS --prefer-offline --loglevel=error >&2)
  rm -rf "$out/node_modules"
  mv "$work/deps/node_modules" "$out/node_modules"
  echo "$deps_stamp" >"$out/.deps-stamp"
  packages="$(find "$out/node_modules" -mindepth 2 -maxdepth 3 -name package.json \( -path '*/node_modules/@*/*/package.json' -o -not -path '*/node_modules/@*' \) | wc -l)"
  log "production dependencies: $packages packages, $(du -sm "$out/node_modules" | cut -f1) MB, $((SECONDS - t))s"
fi

log "compiling: tsc $IMAGE_TSC_ARGS"
t=$SECONDS
# shellcheck disable=SC2086 # the arguments are a word list
(cd "$repo" && node_modules/.bin/tsc $IMAGE_TSC_ARGS --outDir "$work/tsc")
rm -rf "$out/operator"
mv "$work/tsc/operator" "$out/operator"
cp "$repo/package.json" "$out/package.json"
log "compiling: $(find "$out/operator" -name '*.js' | wc -l) modules, $((SECONDS - t))s"
rm -rf "$work"

# The directory must hold what the image's /app holds, and nothing else.
actual="$(cd "$out" && find . -mindepth 1 -maxdepth 1 -not -name '.*' -printf '%f\n' | LC_ALL=C sort | tr '\n' ' ')"
expected="$(printf '%s\n' $IMAGE_RUNTIME_FILES | LC_ALL=C sort | tr '\n' ' ')"
[[ "$actual" == "$expected" ]] || die "$out holds [$actual], expected [$expected] (IMAGE_RUNTIME_FILES)"

echo "$build_stamp" >"$out/.build-stamp"
log "built $out in $((SECONDS - started))s (stamp ${build_stamp:0:12})"
echo "$out"
