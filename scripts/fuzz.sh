#!/bin/sh
# Runs libFuzzer targets built by `make fuzz-bins` and prints one line per
# target and a total; exits 1 when any target found something (a crash, a
# CHECK, an ASan or UBSan report, a leak, a timeout).
#
#   scripts/fuzz.sh MODE BINDIR SECONDS NAME...
#
#   MODE run    fuzz each target for SECONDS (0: only run the corpus and
#               the seeds once), keeping what it finds in the local,
#               untracked fuzz/corpus-NAME/ (make fuzz)
#   MODE ci     the same, with the finds thrown away, so the tree stays
#               as it is (make fuzz-ci)
#   MODE merge  minimize fuzz/corpus/NAME/, fuzz/corpus-NAME/ and the
#               seeds into the tracked fuzz/corpus/NAME/: only inputs that
#               add coverage beyond the seeds stay (make fuzz-merge)
#
# Every mode reads fuzz/seeds/NAME/ (hand-made, tracked) and
# fuzz/corpus/NAME/ (minimized, tracked).  A finding's input is left in
# BINDIR as NAME-crash-... (or -leak-, -timeout-), its log in BINDIR/NAME.log.
set -u
mode=$1
bin=$2
secs=$3
shift 3
passed=0
failed=0
broken=""
for n in "$@"; do
    log="$bin/$n.log"
    mkdir -p "fuzz/corpus/$n" "fuzz/seeds/$n"
    if [ "$mode" = merge ]; then
        work="$bin/merge-$n"
        rm -rf "$work"
        mkdir -p "$work" "fuzz/corpus-$n"
        cp "fuzz/seeds/$n"/* "$work"/ 2>/dev/null
        "$bin/$n" -merge=1 "$work" "fuzz/corpus/$n" "fuzz/corpus-$n" \
            >"$log" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
            for s in "fuzz/seeds/$n"/*; do
                [ -e "$s" ] && rm -f "$work/$(basename "$s")"
            done
            rm -rf "fuzz/corpus/$n"
            mv "$work" "fuzz/corpus/$n"
        fi
    else
        if [ "$mode" = ci ]; then
            new="$bin/ci-$n"
            rm -rf "$new"
        else
            new="fuzz/corpus-$n"
        fi
        mkdir -p "$new"
        # 0 seconds: only the tracked corpus and seeds, once each.
        limit="-max_total_time=$secs"
        [ "$secs" = 0 ] && limit="-runs=0"
        "$bin/$n" "$limit" -timeout=25 -print_final_stats=1 \
            -artifact_prefix="$bin/$n-" \
            "$new" "fuzz/corpus/$n" "fuzz/seeds/$n" >"$log" 2>&1
        rc=$?
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    files=$(ls "fuzz/corpus/$n" | wc -l)
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok   $n: ${runs:-0} runs, ${cov:-cov: ?}, corpus $files"
    else
        failed=$((failed + 1))
        broken="$broken $n"
        grep -E 'ERROR: |runtime error|SUMMARY|Test unit written|^==[0-9]+==' \
            "$log" | head -n 20
        echo "FAIL $n: exit $rc after ${runs:-?} runs, see $log"
    fi
done
case $mode in
    run) label=fuzz ;;
    *) label="fuzz-$mode" ;;
esac
echo "$label: $passed passed, $failed failed"
if [ -n "$broken" ]; then
    echo "failing:$broken"
    exit 1
fi
