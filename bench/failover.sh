#!/usr/bin/env bash
# failover: time from a leader's death (SIGSTOP, or kill -9 that
# `cluster up` restarts) to the first acknowledged write to one of its
# partitions, p50/p99 over FAILOVER_ROUNDS rounds; see bench/failover.py.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PARTKV=${PARTKV:-$root/build/partkv}
[[ -x $PARTKV ]] || { echo "failover: build partkv first ($PARTKV)" >&2; exit 2; }
exec /usr/bin/python3 "$root/bench/failover.py"
