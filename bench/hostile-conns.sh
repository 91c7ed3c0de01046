#!/bin/sh
# RSS per connection under 1,000 hostile or idle connections, partkv
# against redis-server in the same run (see bench/hostile-conns.py).
# About 3 minutes; HOSTILE_CONNS=200 HOSTILE_HOLD=2 for a quick look.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
exec /usr/bin/python3 "$(dirname "$0")/hostile-conns.py" "$@"
