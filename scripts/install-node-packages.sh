#!/usr/bin/env bash
# Installs the Debian packages a local Kubernetes node (test/support/node) runs with:
#   runc                          the OCI runtime containerd starts containers with
#   containernetworking-plugins   CNI bridge, host-local and loopback (in /usr/lib/cni)
#   nftables                      `nft`, for the egress guard and kube-proxy's nftables mode
#   gcc, libc6-dev                to compile the static `pause` binary
#   busybox-static                one static binary (sh, httpd, wget, nslookup, nc) for the
#                                 images test Pods run
#
#   bash scripts/install-node-packages.sh        (run by test/support/node/build.sh)
#
# Idempotent: when dpkg knows every package as installed it does nothing, so it asks no
# mirror. Otherwise it runs `apt-get update` first (a fresh machine has no package lists) and
# installs only what is missing. Needs root, as the node itself does.
set -euo pipefail

log() { printf '[install-node-packages %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[install-node-packages] ERROR: %s\n' "$*" >&2; exit 1; }

packages=(runc containernetworking-plugins nftables gcc libc6-dev busybox-static)
command -v dpkg-query >/dev/null 2>&1 || die "no dpkg-query: this script installs Debian packages (Debian bookworm expected)"
installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }

missing=()
for pkg in "${packages[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

[[ "$(id -u)" == 0 ]] || die "missing Debian packages: ${missing[*]}; run this script as root (apt-get install)"
command -v apt-get >/dev/null 2>&1 || die "missing packages ${missing[*]} and no apt-get on this machine (Debian bookworm expected)"

started=$SECONDS
log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# apt's lock is waited for (bounded), so two builds started together both succeed.
apt_opts=(-q -o DPkg::Lock::Timeout=120)
apt-get "${apt_opts[@]}" update >/dev/null
apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null
for pkg in "${missing[@]}"; do
  installed "$pkg" || die "apt-get installed nothing for $pkg"
done
log "installed ${missing[*]} in $((SECONDS - started))s"
