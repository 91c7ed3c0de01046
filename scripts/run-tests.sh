#!/bin/sh
# Runs C test binaries, each in its own process under a timeout, and prints
# one total of passed and failed tests (from cmocka's summaries).  A binary
# that crashes or times out counts as a failure even if it printed nothing.
#   scripts/run-tests.sh BIN...
set -u
passed=0
failed=0
broken=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for bin in "$@"; do
    timeout "${TEST_TIMEOUT:-600}" "$bin" >"$log" 2>&1
    rc=$?
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ "$rc" -ne 0 ] || [ -n "${f:-}" ]; then
        cat "$log"
        broken="$broken $(basename "$bin")"
        [ -z "${f:-}" ] && failed=$((failed + 1))
    else
        echo "ok   $(basename "$bin"): ${p:-0} passed"
    fi
done
echo "C tests: $passed passed, $failed failed"
if [ -n "$broken" ]; then
    echo "failing:$broken"
    exit 1
fi
