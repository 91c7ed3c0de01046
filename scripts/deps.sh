#!/bin/sh
# Installs the Debian packages partkv needs to build and test, if missing.
# Prints nothing when everything is already there.
set -eu
pkgs="make gcc clang pkg-config libxxhash-dev libssl-dev libcmocka-dev
      liblmdb-dev libuv1-dev libjansson-dev libcurl4-openssl-dev
      clang-format libclang-rt-14-dev redis-server redis-tools
      python3-redis python3-pytest iproute2 etcd-server iptables"
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
