#!/usr/bin/env bash
# greenstalk's own test suite (Python), its harness unchanged, against redstalk:
# the harness starts BEANSTALKD_PATH with beanstalkd's flags (-l HOST -p PORT, or
# -l unix:PATH) for each test, sleeps 0.1 s, connects and runs the test. Here
# BEANSTALKD_PATH is a small script that runs `node dist/cli.js` with those flags
# and either a Redis of this script's own (a fresh prefix per test) or the
# embedded one (a fresh data folder per test).
#
#   npm run build
#   scripts/greenstalk.sh PATH/TO/greenstalk [redis|embedded|beanstalkd] [RUNS]
#
# ACTIVATE=1 starts redstalk under systemd-socket-activate (socket activation, as
# systemd would): the socket exists before Node starts, so the harness's connect
# after 0.1 s succeeds however long Node takes to start, and what it sends waits.
#
# PATH/TO/greenstalk is a checkout of github.com/justinmayhew/greenstalk (nothing
# of it is kept here); pytest must be installed. `beanstalkd` runs the suite
# against the beanstalkd on PATH (or $BEANSTALKD), for comparison. Prints each
# run's pass count, then every run's counts on one line.
set -euo pipefail

gs=$(cd "${1:?usage: scripts/greenstalk.sh PATH/TO/greenstalk [redis|embedded|beanstalkd] [RUNS]}" && pwd)
mode=${2:-redis}
runs=${3:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$root/dist/cli.js" ] || { echo "dist/cli.js is missing: npm run build first" >&2; exit 2; }
[ -f "$gs/tests/test_greenstalk.py" ] || { echo "$gs has no tests/test_greenstalk.py" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/redstalk-greenstalk.XXXXXX")
redis_pid=''
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

wrapper="$work/beanstalkd"
case "$mode" in
  redis)
    port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --loglevel warning >"$work/redis.log" 2>&1 &
    redis_pid=$!
    until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
    cat >"$wrapper" <<EOF
#!/bin/sh
exec \$ACTIVATE node "$root/dist/cli.js" "\$@" --redis redis://127.0.0.1:$port --prefix "gs\$\$" --log-level warn
EOF
    ;;
  embedded)
    cat >"$wrapper" <<EOF
#!/bin/sh
exec \$ACTIVATE node "$root/dist/cli.js" "\$@" --data-dir "\$(mktemp -d "$work/data.XXXXXX")" --log-level warn
EOF
    ;;
  beanstalkd)
    wrapper=${BEANSTALKD:-$(command -v beanstalkd)}
    ;;
  *) echo "mode: redis, embedded or beanstalkd" >&2; exit 2 ;;
esac
if [ "$mode" != beanstalkd ]; then
  if [ "${ACTIVATE:-0}" = 1 ]; then
    # The harness's -l HOST -p PORT / -l unix:PATH, as systemd-socket-activate's -l.
    body=$(tail -n +2 "$wrapper")
    cat >"$wrapper" <<'EOF'
#!/bin/sh
l=; p=; prev=
for a in "$@"; do case "$prev" in -l) l=$a ;; -p) p=$a ;; esac; prev=$a; done
case "$l" in unix:*) rm -f "${l#unix:}"; ACTIVATE="systemd-socket-activate -l ${l#unix:}" ;; *) ACTIVATE="systemd-socket-activate -l $l:$p" ;; esac
EOF
    echo "$body" >>"$wrapper"
  else
    sed -i 's/\$ACTIVATE //' "$wrapper"
  fi
  chmod +x "$wrapper"
fi

counts=()
for i in $(seq "$runs"); do
  out=$(cd "$work" && BEANSTALKD_PATH="$wrapper" PYTHONPATH="$gs/src" python3 -m pytest -q -p no:cacheprovider "$gs/tests" 2>&1 || true)
  passed=$(grep -oE '[0-9]+ passed' <<<"$out" | grep -oE '[0-9]+' || echo 0)
  failed=$(grep -oE '[0-9]+ failed' <<<"$out" | grep -oE '[0-9]+' || echo 0)
  echo "run $i: $passed passed, $failed failed"
  [ "$failed" = 0 ] || grep -E '^FAILED' <<<"$out" | sed 's/^/  /'
  counts+=("$passed/$((passed + failed))")
done
echo "$mode: ${counts[*]}"
