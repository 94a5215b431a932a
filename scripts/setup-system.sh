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
echo "pyk8s: installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "pyk8s: system packages installed"
