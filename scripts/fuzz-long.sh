#!/bin/sh
# The long fuzz runs of fuzz/README.md, in lanes:
#
#   scripts/fuzz-long.sh LANES SECONDS NAME...
#
# Copies the libFuzzer targets NAME... (built by `make fuzz-bins`) to
# build/fuzz-long/bin, so that a rebuild meanwhile changes nothing, and
# fuzzes each for SECONDS (scripts/fuzz.sh run: finds go to the untracked
# fuzz/corpus-NAME/), LANES targets at a time.  With NETFUZZ_SECONDS set,
# the first lane starts with the network fuzzer, that long, against
# build/asan/partkv (also copied), so that LANES runs share the machine at
# any time.  Each run appends a line to build/fuzz-long/ledger:
#
#   2026-12-05T16:30:00Z 4bf03c7 fuzz_resp 3600 s: ok   fuzz_resp: 23687000 runs, cov: 303, corpus 429
#
# and its log stays in build/fuzz-long/bin/NAME.log (netfuzz.log).  Exits
# 1 when any run found something (the ledger's time is when a run ended).
# A finding's input is
# build/fuzz-long/bin/NAME-crash-... (see fuzz/README.md).
set -u
lanes=$1
secs=$2
shift 2
out=build/fuzz-long
bin=$out/bin
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
mkdir -p "$bin"
for n in "$@"; do
    cp "build/fuzz/$n" "$bin/$n" || exit 2
done
note() {
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $commit $*" >>"$out/ledger"
}

netfuzz() {
    /usr/bin/python3 tests/integration/netfuzz.py --partkv "$bin/partkv" \
        --duration "$NETFUZZ_SECONDS" --runs 10 >"$bin/netfuzz.log" 2>&1
    rc=$?
    note "netfuzz $NETFUZZ_SECONDS s: $(tail -n 1 "$bin/netfuzz.log")"
    return $rc
}

# Lane k takes the targets k, k + lanes, k + 2 lanes ...; with the network
# fuzzer, which lane 0 runs first, the targets are dealt from lane 1 on, so
# that lane 0 gets no more of them than the others.
lane() {
    i=0
    rc=0
    shift_by=0
    [ -n "${NETFUZZ_SECONDS:-}" ] && shift_by=1
    if [ "$k" -eq 0 ] && [ -n "${NETFUZZ_SECONDS:-}" ]; then
        netfuzz || rc=1
    fi
    for n in "$@"; do
        if [ $(((i + shift_by) % lanes)) -eq "$k" ]; then
            line=$(scripts/fuzz.sh run "$bin" "$secs" "$n" | grep -E '^(ok|FAIL) ')
            note "$n $secs s: $line"
            case $line in ok*) ;; *) rc=1 ;; esac
        fi
        i=$((i + 1))
    done
    return $rc
}

if [ -n "${NETFUZZ_SECONDS:-}" ]; then
    cp build/asan/partkv "$bin/partkv" || exit 2
fi
pids=""
k=0
while [ "$k" -lt "$lanes" ]; do
    lane "$@" &
    pids="$pids $!"
    k=$((k + 1))
done
failed=0
for p in $pids; do
    wait "$p" || failed=1
done
exit $failed
