#!/bin/sh
# Tests redstalk.sh against a running redstalk: sh test.sh HOST PORT
# Prints "OK <n> checks" and exits 0, or prints each "FAIL: ..." and exits 1.
# Tube and room names carry this process' id, so any server will do.

[ $# -eq 2 ] || { echo "usage: sh test.sh HOST PORT" >&2; exit 2; }
export REDSTALK_SERVER=$1:$2
HERE=$(cd "$(dirname "$0")" && pwd)
CLI="$HERE/redstalk.sh"
. "$HERE/redstalk.sh"

checks=0 failures=0
check() { # WHAT EXPECTED ACTUAL
	checks=$((checks + 1))
	if [ "$2" != "$3" ]; then
		failures=$((failures + 1))
		printf 'FAIL: %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"
	fi
}
isnum() { case $1 in *[!0-9]* | '') echo no ;; *) echo yes ;; esac; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/redstalk-sh-test.XXXXXX")
trap 'rs_close; rm -rf "$TMP"' EXIT
t=sh$$ # tube
r=room$$

# --- the command line, one connection per call
id=$("$CLI" put -t "$t" -p 5 -r 30 'hello world')
check "put prints the id" yes "$(isnum "$id")"
check "stats-job: tube (unquoted), priority, ttr" "$t 5 30" \
	"$("$CLI" stats-job "$id" | rs_field tube) $("$CLI" stats-job "$id" | rs_field pri) $("$CLI" stats-job "$id" | rs_field ttr)"
printf 'a\r\nb\000c\377' >"$TMP/binary"
id2=$("$CLI" put -t "$t" -p 9 - <"$TMP/binary")
check "reserve takes the most urgent job" "hello world" "$("$CLI" reserve -t "$t" -w 0)"
"$CLI" reserve -t "$t" -w 0 >"$TMP/out"
check "binary body from stdin, back byte for byte" same "$(cmp -s "$TMP/binary" "$TMP/out" && echo same)"
check "reserve deleted both" "NOT_FOUND NOT_FOUND" "$("$CLI" raw "peek $id") $("$CLI" raw "peek $id2")"
"$CLI" reserve -t "$t" -w 0 2>"$TMP/err"
check "reserve: TIMED_OUT, exit 1" "1 redstalk: TIMED_OUT" "$? $(cat "$TMP/err")"

id=$("$CLI" put -t "$t" job-ok)
check "work: command succeeds" "job-ok" "$("$CLI" work -t "$t" -w 0 cat)"
check "work: ... and the job is deleted" NOT_FOUND "$("$CLI" raw "peek $id")"
"$CLI" put -t "$t" job-fails >/dev/null
"$CLI" work -t "$t" -w 0 -D 100 sh -c 'cat >/dev/null; exit 7'
check "work: the command's exit status" 7 $?
check "work: the failed job is released with the delay" 1 "$("$CLI" stats-tube "$t" | rs_field current-jobs-delayed)"

id=$("$CLI" put -t "$t" -d 100 x)
check "delete" "" "$("$CLI" delete "$id")"
"$CLI" delete "$id" 2>"$TMP/err"
check "delete again: NOT_FOUND, exit 1" "1 redstalk: NOT_FOUND" "$? $(cat "$TMP/err")"
check "stats: version" 1.13 "$("$CLI" stats | rs_field version)"
check "stats-tube: name unquoted" "$t" "$("$CLI" stats-tube "$t" | rs_field name)"
"$CLI" stats-tube "nosuch$$" 2>/dev/null
check "stats-tube of no tube: exit 1" 1 $?
check "raw" "USING default" "$("$CLI" raw list-tube-used)"
"$CLI" frobnicate 2>/dev/null
check "unknown subcommand: usage, exit 2" 2 $?

# put-with and tube-set
k=$t-keyed
expiring=$("$CLI" put -t "$k" -e 1 -x bury expiring) # checked below, once expired
id=$("$CLI" put -t "$k" -k "order$$" -p 7 first)
check "put -k prints the id" "0 yes" "$? $(isnum "$id")"
dup=$("$CLI" put -t "$k" -k "order$$" second)
check "put -k of the same key: the first job's id, exit 3" "$id 3" "$dup $?"
check "... and nothing stored" "$(printf 'FOUND %s 5\nfirst' "$id") 2 1" \
	"$("$CLI" raw "peek $id") $("$CLI" stats-tube "$k" | rs_field total-jobs) $("$CLI" stats-tube "$k" | rs_field duplicate-puts)"
"$CLI" tube-set "$k" max-reserved 5
check "tube-set" "0 5" "$? $("$CLI" stats-tube "$k" | rs_field max-reserved)"
"$CLI" tube-set "$k" speed 1 2>"$TMP/err"
check "tube-set of no such setting: BAD_FORMAT, exit 1" "1 redstalk: BAD_FORMAT" "$? $(cat "$TMP/err")"

# A put-with whose reply is lost: for the first connection, this nc passes on one reply line
# (to `use`), then holds the connection without a word until it is ended (with its real nc),
# as nc does when the server closed; after RS_PUT_TIMEOUT the put-with is sent again.
mkdir "$TMP/bin"
cat >"$TMP/bin/nc" <<EOF
#!/bin/sh
[ -e "$TMP/cut" ] && exec $(command -v nc) "\$@"
mkfifo "$TMP/cut"
exec 3<&0
$(command -v nc) "\$@" <&3 >"$TMP/cut" &
trap 'kill \$!' TERM
head -n 1 <"$TMP/cut"
wait
EOF
chmod +x "$TMP/bin/nc"
l=$t-lost
id=$(PATH="$TMP/bin:$PATH" RS_PUT_TIMEOUT=1 RS_PUT_DELAY=0 "$CLI" put -t "$l" -k "order$$" lost 2>"$TMP/err")
check "a lost reply: sent again, DUPLICATE (exit 3)" "3 yes redstalk: sending put-with order$$ again" \
	"$? $(isnum "$id") $(grep again "$TMP/err")"
check "... one job stored, the id printed" "1 1 $l" \
	"$("$CLI" stats-tube "$l" | rs_field total-jobs) $("$CLI" stats-tube "$l" | rs_field duplicate-puts) $("$CLI" stats-job "$id" | rs_field tube)"

for _ in 1 2 3 4 5; do
	[ "$("$CLI" stats-job "$expiring" | rs_field state)" = buried ] && break
	sleep 1
done
check "put -e 1 -x bury: buried, not reserved within a second" "buried 1" \
	"$("$CLI" stats-job "$expiring" | rs_field state) $("$CLI" stats-tube "$k" | rs_field jobs-expired)"

"$CLI" raw "room-config $r 1 30 120 30" >/dev/null
check "enter" ENTERED "$("$CLI" enter "$r" ann)"
check "enter when full" "WAITING 1" "$("$CLI" enter "$r" bob | cut -d' ' -f1-2)"
check "check" "WAITING 2" "$("$CLI" check "$r" cat | cut -d' ' -f1-2)"
"$CLI" leave "$r" ann && "$CLI" leave "$r" ann
check "leave twice frees the place" READY "$("$CLI" check "$r" bob)"
"$CLI" leave "$r" zed 2>/dev/null
check "leave of a stranger: exit 1" 1 $?
check "stats-room" "\"$r\" 0 2" \
	"$("$CLI" stats-room "$r" | sed -n 's/^name: //p') $("$CLI" stats-room "$r" | rs_field participants) $("$CLI" stats-room "$r" | rs_field waiting)"

# --- the functions, on one connection
rs_connect
check "rs_use" 0 "$(rs_use "$t"; echo $?)"
rs_use "$t"
check "rs_watch counts" "WATCHING 2" "$(rs_watch "$t" >/dev/null; echo "$RS_REPLY")"
rs_watch "$t" && rs_ignore default
check "rs_ignore of the last tube: NOT_IGNORED" "1 NOT_IGNORED" "$(rs_ignore "$t" 2>/dev/null; echo "$? $RS_REPLY")"
id=$(rs_put "one two" 3 0 10)
rs_put_file "$TMP/binary" >/dev/null
rs_reserve 0
check "rs_reserve sets RS_JOB_ID" "$id" "$RS_JOB_ID"
check "rs_body" "one two" "$(rs_body)"
check "stats-job: reserved" reserved "$(rs_stats_job "$id" | rs_field state)"
rs_touch "$id"
check "rs_touch" TOUCHED "$RS_REPLY"
rs_release "$id" 3 0
check "rs_release" "RELEASED ready" "$RS_REPLY $(rs_stats_job "$id" | rs_field state)"
rs_reserve 0 && rs_bury "$RS_JOB_ID"
check "rs_bury" "BURIED buried" "$RS_REPLY $(rs_stats_job "$id" | rs_field state)"
check "rs_cmd: kick" "KICKED 1" "$(rs_cmd 'kick 5')"
rs_reserve && rs_reserve 0
cmp -s "$TMP/binary" "$RS_BODY_FILE"
check "rs_reserve without timeout, then a binary body" 0 $?
rs_delete "$id"
check "rs_delete" DELETED "$RS_REPLY"
rs_reserve 0 2>/dev/null
check "rs_reserve: TIMED_OUT" "1 TIMED_OUT" "$? $RS_REPLY"
check "rs_stats" 1.13 "$(rs_stats | rs_field version)"
check "rs_stats_tube: one reserved" 1 "$(rs_stats_tube "$t" | rs_field current-jobs-reserved)"
rs_room_config "$r-2" 5 30 120 0
check "rs_enter" ENTERED "$(rs_enter "$r-2" ann)"
check "rs_check" READY "$(rs_check "$r-2" ann)"
check "rs_leave" LEFT "$(rs_leave "$r-2" ann; echo "$RS_REPLY")"
check "rs_stats_room" 1 "$(rs_stats_room "$r-2" | rs_field left-total)"
rs_close
check "rs_close hands the reserved job back" 1 "$("$CLI" stats-tube "$t" | rs_field current-jobs-ready)"

RS_PUT_DELAY=0
rs_connect
rs_use "$k" && rs_watch "$k" && rs_ignore default
rs_tube_set "$k" dedup-window 60
check "rs_tube_set" 60 "$(rs_stats_tube "$k" | rs_field dedup-window)"
rs_put_with first "f$$" 0 delete 5 >"$TMP/id"
check "rs_put_with" "0 INSERTED" "$? ${RS_REPLY% *}"
id=$(cat "$TMP/id")
check "rs_put_with prints the id" "INSERTED $id" "$RS_REPLY"
rs_put_with second "f$$" >/dev/null
check "rs_put_with of the same key: DUPLICATE, 3" "3 DUPLICATE $id" "$? $RS_REPLY"
kill "$RS_NC_PID" # the connection is lost
rs_put_with 'no key' - 2>/dev/null
check "rs_put_with without a key, connection lost: 2, not sent again" 2 $?
rs_put_with keyed "g$$" >"$TMP/id" 2>/dev/null
check "rs_put_with with a key, connection lost: sent again on a new one" "0 $k" \
	"$? $(rs_stats_job "$(cat "$TMP/id")" | rs_field tube)"
check "... which watches the tubes watched before" "$(printf -- '---\n- %s' "$k")" "$(rs_cmd list-tubes-watched | sed 1d)"
rs_close
rs_use "$t" 2>/dev/null
check "not connected: exit 2" 2 $?
rs_connect 127.0.0.1 1
rs_stats 2>/dev/null
check "connection refused: exit 2" 2 $?
rs_close

if [ "$failures" -gt 0 ]; then
	echo "$failures of $checks checks failed"
	exit 1
fi
echo "OK $checks checks"
