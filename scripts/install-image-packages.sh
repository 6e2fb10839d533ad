#!/usr/bin/env bash
# Fetches the Debian packages the image base is made of (scripts/image-packages.txt: exact
# versions and SHA-256 digests) into a directory, with apt-get against the list's own sources and
# a private apt state, so the machine's apt configuration and installed packages play no part and
# nothing is installed. A .deb already there with the right digest is kept: a warm run reads and
# hashes about 4 MB and touches no network.
#
#   bash scripts/install-image-packages.sh DEBDIR           fetch what is missing, check all
#   bash scripts/install-image-packages.sh --pin            print the list anew with the
#                                                           mirror's current versions
#
# Each package lands as DEBDIR/<name>_<version>.deb (a `:` in the version becomes `%3a`, as apt
# names it). Debian's mirrors keep only the newest version of each package in a suite, so a
# pinned version disappears at the next point release or security update; the script then
# fails, naming the package, and `--pin` prints the list to commit instead.
#
# Environment:
#   BUCKETOPERATOR_CACHE         cache root; apt's lists go to $BUCKETOPERATOR_CACHE/oci/apt
#                                (default: $HOME/.cache/bucketoperator)
#   BUCKETOPERATOR_IMAGE_PACKAGES the list (default: scripts/image-packages.txt)
#
# Progress goes to stderr; the last line on stdout is DEBDIR (or, with --pin, the list).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
list="${BUCKETOPERATOR_IMAGE_PACKAGES:-$repo/scripts/image-packages.txt}"
cache_root="${BUCKETOPERATOR_CACHE:-$HOME/.cache/bucketoperator}"
apt_dir="$cache_root/oci/apt"

log() { printf '[image-packages %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[image-packages] ERROR: %s\n' "$*" >&2; exit 1; }

[[ -r "$list" ]] || die "cannot read the package list $list"
command -v apt-get >/dev/null || die "apt-get is needed to fetch the image's Debian packages"

# The list: `source <sources.list line>` and `package <name> <version> <sha256>` lines.
sources=()
names=()
versions=()
digests=()
while read -r kind rest; do
  case "$kind" in
    '' | '#'*) ;;
    source) sources+=("$rest") ;;
    package)
      read -r name version digest extra <<<"$rest"
      [[ -n "$digest" && -z "${extra:-}" && "$digest" =~ ^[0-9a-f]{64}$ ]] || die "$list: expected 'package <name> <version> <sha256>', got: package $rest"
      names+=("$name")
      versions+=("$version")
      digests+=("$digest")
      ;;
    *) die "$list: unknown line: $kind $rest" ;;
  esac
done <"$list"
((${#sources[@]} > 0)) || die "$list names no source"
((${#names[@]} > 0)) || die "$list names no package"

# apt with the list's sources and its own state: the host's sources, preferences and dpkg
# database are never read, so the result is the same on any Debian or Ubuntu machine.
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/etc/preferences.d"
printf '%s\n' "${sources[@]}" >"$apt_dir/etc/sources.list"
: >"$apt_dir/status"
apt_opts=(
  -o "Dir::Etc::sourcelist=$apt_dir/etc/sources.list"
  -o "Dir::Etc::sourceparts=/dev/null"
  -o "Dir::Etc::preferencesparts=$apt_dir/etc/preferences.d"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::State::status=$apt_dir/status"
  -o "Dir::Cache=$apt_dir/cache"
  -o "APT::Architecture=amd64"
  -o "APT::Sandbox::User=root"
  -o "Acquire::Languages=none"
)
apt_update() {
  log "apt-get update (${#sources[@]} sources)"
  apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update failed for the sources in $list"
}

if [[ "${1:-}" == "--pin" ]]; then
  [[ $# -eq 1 ]] || die "usage: install-image-packages.sh --pin"
  apt_update
  sed -n '/^package /q;p' "$list"
  for name in "${names[@]}"; do
    # The candidate: the version apt would install from these sources, and its digest.
    version="$(apt-cache "${apt_opts[@]}" policy "$name" | sed -n 's/^  Candidate: //p')"
    [[ -n "$version" && "$version" != "(none)" ]] || die "$name is not in the sources of $list"
    digest="$(apt-cache "${apt_opts[@]}" show "$name=$version" | sed -n 's/^SHA256: //p' | head -n1)"
    echo "package $name $version $digest"
  done
  exit 0
fi

[[ $# -eq 1 ]] || die "usage: install-image-packages.sh DEBDIR | --pin"
out="$1"
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

deb_of() { printf '%s/%s_%s.deb' "$out" "$1" "${2//:/%3a}"; }
digest_of() { sha256sum "$1" | cut -d' ' -f1; }

missing=()
for i in "${!names[@]}"; do
  file="$(deb_of "${names[$i]}" "${versions[$i]}")"
  if [[ -f "$file" && "$(digest_of "$file")" == "${digests[$i]}" ]]; then continue; fi
  rm -f "$file"
  missing+=("$i")
done

if ((${#missing[@]} > 0)); then
  apt_update
  work="$(mktemp -d "$out/.download.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  wanted=()
  for i in "${missing[@]}"; do
    name="${names[$i]}" version="${versions[$i]}"
    # apt-cache show exits 0 for a version it does not know, printing nothing.
    if [[ -z "$(apt-cache "${apt_opts[@]}" show "$name=$version" 2>/dev/null)" ]]; then
      current="$(apt-cache "${apt_opts[@]}" policy "$name" 2>/dev/null | sed -n 's/^  Candidate: //p')"
      die "$name $version is not on the mirror any more (it offers ${current:-no version}): Debian keeps only the newest version of a package in a suite. Run \`bash scripts/install-image-packages.sh --pin > scripts/image-packages.txt.new\`, review the changes and commit it as scripts/image-packages.txt"
    fi
    wanted+=("$name=$version")
  done
  log "fetching ${wanted[*]}"
  (cd "$work" && apt-get "${apt_opts[@]}" -qq download "${wanted[@]}" >&2) || die "apt-get download failed (see above)"
  for i in "${missing[@]}"; do
    name="${names[$i]}" version="${versions[$i]}"
    fetched=("$work/${name}_${version//:/%3a}_"*.deb)
    [[ ${#fetched[@]} -eq 1 && -f "${fetched[0]}" ]] || die "apt-get download left no .deb for $name $version"
    got="$(digest_of "${fetched[0]}")"
    [[ "$got" == "${digests[$i]}" ]] || die "$name $version from the mirror has SHA-256 $got, $list pins ${digests[$i]}: the list or the mirror is wrong; do not build on it"
    mv "${fetched[0]}" "$(deb_of "$name" "$version")"
  done
fi
log "${#names[@]} packages in $out (${#missing[@]} fetched)"
echo "$out"
