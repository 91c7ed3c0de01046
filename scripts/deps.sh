#!/bin/sh
# Installs the Debian packages partkv needs to build and test, if missing.
# Prints nothing when everything is already there.
set -eu
# clang with libclang-rt-14-dev (libFuzzer and the sanitizer runtimes):
# make check, make fuzz and the fuzz-ci part of make test.
pkgs="make gcc clang pkg-config libxxhash-dev libssl-dev libcmocka-dev
      liblmdb-dev libuv1-dev libjansson-dev libcurl4-openssl-dev
      clang-format libclang-rt-14-dev redis-server redis-tools
      python3-redis python3-pytest python3-prometheus-client iproute2
      etcd-server iptables openssl"
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
# Node.js may come from elsewhere than Debian (with npm inside it).
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing
fi
# ioredis, a cluster client from outside Debian, for the topology tests
# (tests/integration/test_topology.py), from the npm registry.
npm_dir="$(dirname "$0")/../build/npm"
if [ ! -d "$npm_dir/node_modules/ioredis" ]; then
    echo "deps: npm install ioredis@5 (into build/npm)"
    mkdir -p "$npm_dir"
    npm install --silent --no-audit --no-fund --prefix "$npm_dir" ioredis@5 \
        >/dev/null 2>&1 || echo "deps: npm install ioredis failed"
fi
