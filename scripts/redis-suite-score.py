#!/usr/bin/python3
"""Scores partkv against redis-server on Redis test-suite output
(scripts/redis-suite.sh runs the harness; this reads what it printed).

usage: redis-suite-score.py RESULTS.tsv FAILING.txt
RESULTS.tsv: one line per unit, "unit<TAB>redis output<TAB>partkv output".

A harness output holds lines "[ok]: NAME (N ms)", "[err]: NAME in FILE"
followed by the error, "[exception]: ...", "[skip]: NAME", "[ignore]: ...".
After the run the harness repeats the failed tests under "!!! WARNING";
parsing stops there.  A name may occur several times in a unit (the same
test body run per encoding), so tests are told apart by name and
occurrence number."""
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
OK = re.compile(r"^\[ok\]: (.*) \(\d+ ms\)$")
ERR = re.compile(r"^\[err\]: (.*) in tests/\S+$")
EXC = re.compile(r"^\[(exception|TIMEOUT)\]: ?(.*)$")


def parse(path):
    """-> (passed {key}, errors {key: first line}, exception or None,
    order [key]): key is (name, occurrence)."""
    try:
        with open(path, errors="replace") as f:
            lines = [ANSI.sub("", ln.rstrip("\n")) for ln in f]
    except OSError as e:
        return set(), {}, "no output: %s" % e, []
    seen, passed, errors, order, exc = {}, set(), {}, [], None

    def key(name):
        seen[name] = seen.get(name, 0) + 1
        k = (name, seen[name])
        order.append(k)
        return k
    for i, ln in enumerate(lines):
        if ln.startswith("!!! WARNING"):
            break
        m = OK.match(ln)
        if m:
            passed.add(key(m.group(1)))
            continue
        m = ERR.match(ln)
        if m:
            msg = lines[i + 1].strip() if i + 1 < len(lines) else ""
            errors[key(m.group(1))] = msg
            continue
        m = EXC.match(ln)
        if m and exc is None:
            msg = m.group(2).strip()
            # "Executing test client: <error>." then the Tcl trace.
            if not msg and i + 1 < len(lines):
                msg = lines[i + 1].strip()
            if msg.startswith("Executing test client: "):
                msg = msg[len("Executing test client: "):]
            exc = msg[:300]
    return passed, errors, exc, order


def main():
    results, failing_path = sys.argv[1], sys.argv[2]
    total_r = total_p = 0
    failing = []
    rows = []
    with open(results) as f:
        units = [ln.rstrip("\n").split("\t") for ln in f if ln.strip()]
    for unit, rpath, ppath in units:
        r_pass, _, r_exc, r_order = parse(rpath)
        p_pass, p_err, p_exc, p_order = parse(ppath)
        both = [k for k in r_order if k in r_pass and k in p_pass]
        total_r += len(r_pass)
        total_p += len(both)
        # The test an exception stopped is the first one partkv did not
        # report after the last one it did, in redis's order.
        reported = set(p_order)
        last = max([i for i, k in enumerate(r_order) if k in reported],
                   default=-1)
        stopped = r_order[last + 1] if last + 1 < len(r_order) else None
        for k in r_order:
            if k not in r_pass or k in p_pass:
                continue
            if k in p_err:
                why = p_err[k]
            elif p_exc and k == stopped:
                why = "exception: " + p_exc
            elif p_exc:
                why = "not run (the unit aborted)"
            else:
                why = "not run"
            name = k[0] if k[1] == 1 else "%s (#%d)" % k
            failing.append("%s\t%s\t%s" % (unit, name, why))
        note = ""
        if p_exc:
            note = "  aborted: " + p_exc[:90]
        if r_exc:
            note += "  (redis aborted too: %s)" % r_exc[:60]
        elif not r_pass:
            note += "  (redis passed nothing: see %s)" % rpath
        rows.append((unit, len(r_pass), len(both), note))
    w = max([len(u) for u, *_ in rows] + [5])
    for unit, nr, np_, note in rows:
        ratio = 100.0 * np_ / nr if nr else 0.0
        print("%-*s  redis %4d  partkv %4d  (%5.1f%%)%s"
              % (w, unit, nr, np_, ratio, note))
    ratio = 100.0 * total_p / total_r if total_r else 0.0
    print("%-*s  redis %4d  partkv %4d  (%5.1f%%)"
          % (w, "total", total_r, total_p, ratio))
    with open(failing_path, "w") as f:
        f.write("".join(ln + "\n" for ln in failing))
    print("redis-suite: %d tests redis passes and partkv fails: %s"
          % (len(failing), failing_path))


if __name__ == "__main__":
    main()
