#!/usr/bin/env bash
# Installs the system packages pyk8s uses, with apt, when running as root and they are missing.
# Idempotent and quiet when everything is there already.
set -euo pipefail

# package -> a file that proves it is installed
declare -A PROBE=(
  [runc]=/usr/sbin/runc
  [etcd-server]=/usr/bin/etcd
  [etcd-client]=/usr/bin/etcdctl
  [nftables]=/usr/sbin/nft
  [iptables]=/usr/sbin/iptables
  [iproute2]=/usr/bin/ip
  [containernetworking-plugins]=/usr/lib/cni/bridge
  [busybox-static]=/bin/busybox
  [docker-registry]=/usr/bin/docker-registry
  [util-linux]=/usr/bin/nsenter
  [conntrack]=/usr/sbin/conntrack
)
# only for `make test` (setup-system.sh --test): the dashboard's browser tests drive a headless Chromium
if [ "${1:-}" = "--test" ]; then
  PROBE+=(
    [chromium]=/usr/bin/chromium
    [chromium-driver]=/usr/bin/chromedriver
  )
fi

missing=()
for pkg in "${!PROBE[@]}"; do
  [ -e "${PROBE[$pkg]}" ] || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "pyk8s: missing system packages: ${missing[*]} (run as root to install them with apt)" >&2
  exit 0
fi
echo "pyk8s: [system 1/2] apt-get update (for ${#missing[@]} missing packages: ${missing[*]})"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
echo "pyk8s: [system 2/2] apt-get install ${missing[*]}"
# a line per package as apt fetches, unpacks and sets it up; errors go to stderr as they are
apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}" | awk '
    /^(Get:[0-9]+|Unpacking|Setting up) / { print "pyk8s:   " $0; fflush() }'
echo "pyk8s: system packages installed"
