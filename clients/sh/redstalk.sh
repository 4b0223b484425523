#!/bin/sh
# redstalk.sh: redstalk (and beanstalkd) from a POSIX shell, over nc (netcat-openbsd).
#
# Run it for one command per call:   redstalk.sh put -t emails 'ann@example.com'
# or source it for functions on one connection (jobs stay reserved until rs_close):
#   . ./redstalk.sh; rs_connect; rs_watch emails; rs_reserve 5 && rs_body; rs_close
# Server: $REDSTALK_SERVER, host:port (127.0.0.1:11300), as for redstalk's admin commands. See README.md.
#
# Every rs_ function returns 0 on the command's success reply; 1 on any other reply
# (printed on stderr as "redstalk: <reply>"); 2 when there is no connection; rs_put_with
# 3 for DUPLICATE (the job of its key exists: its id is printed, nothing was stored).

RS_SERVER=${REDSTALK_SERVER:-127.0.0.1:11300}
RS_HOST=${RS_SERVER%:*}
RS_PORT=${RS_SERVER##*:}
RS_CR=$(printf '\r')
RS_DIR=
RS_REPLY=
RS_JOB_ID=
RS_BODY_FILE=
# A put-with with a key whose reply is lost (the connection closed, or no reply within
# RS_PUT_TIMEOUT seconds) is sent again on a new connection: RS_PUT_ATTEMPTS sends in all,
# waiting RS_PUT_DELAY seconds more before each. Whole seconds; from the environment too.
RS_PUT_TIMEOUT=${RS_PUT_TIMEOUT:-10}
RS_PUT_ATTEMPTS=${RS_PUT_ATTEMPTS:-5}
RS_PUT_DELAY=${RS_PUT_DELAY:-1}

# Connection: nc runs in the background between two fifos; fd 8 writes to it, fd 9 reads.
# It remembers the server, the used tube and the watched ones, for a new connection to be told.
rs_connect() { # [HOST [PORT]]
	rs_close
	RS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/redstalk.XXXXXX") || return 2
	RS_BODY_FILE=$RS_DIR/body
	mkfifo "$RS_DIR/in" "$RS_DIR/out" || return 2
	_rs_host=${1:-$RS_HOST} _rs_port=${2:-$RS_PORT} _rs_used=default _rs_watched=default
	_rs_dial
}

_rs_dial() {
	nc "$_rs_host" "$_rs_port" <"$RS_DIR/in" >"$RS_DIR/out" &
	RS_NC_PID=$!
	exec 8>"$RS_DIR/in" 9<"$RS_DIR/out"
}

_rs_hang_up() {
	(printf 'quit\r\n' >&8) 2>/dev/null # the server hands this connection's reserved jobs back
	exec 8>&- 9<&-
	wait "$RS_NC_PID" 2>/dev/null
}

rs_close() {
	[ -n "$RS_DIR" ] || return 0
	_rs_hang_up
	rm -rf "$RS_DIR"
	RS_DIR=
}

# A new connection in place of a lost one, told the used and watched tubes again.
_rs_reopen() {
	_rs_hang_up
	_rs_dial
	[ "$_rs_used" = default ] || _rs_call USING "use $_rs_used" || return
	for _rs_tube in $_rs_watched; do
		[ "$_rs_tube" = default ] || _rs_call WATCHING "watch $_rs_tube" || return
	done
	case " $_rs_watched " in
	*" default "*) ;;
	*) _rs_call WATCHING "ignore default" ;;
	esac
}

# Writes run in a subshell: if nc is gone, SIGPIPE ends the subshell, not the caller's shell.
_rs_send() { # LINE [BODY-FILE]
	[ -n "$RS_DIR" ] || { echo "redstalk: not connected (rs_connect)" >&2; return 2; }
	if (
		printf '%s\r\n' "$1"
		if [ $# -gt 1 ]; then cat "$2" && printf '\r\n'; fi
	) >&8 2>/dev/null; then return 0; fi
	echo "redstalk: connection closed" >&2
	return 2
}

# Reads one reply into RS_REPLY; a body (RESERVED/FOUND <id> <bytes>, OK <bytes>) into $RS_BODY_FILE.
rs_read() {
	if ! IFS= read -r RS_REPLY <&9; then
		echo "redstalk: connection closed" >&2
		return 2
	fi
	RS_REPLY=${RS_REPLY%"$RS_CR"}
	: >"$RS_BODY_FILE"
	case $RS_REPLY in
	'RESERVED '*' '* | 'FOUND '*' '* | 'OK '*)
		# bs=1: each read takes one byte, so nothing after the body is consumed.
		dd bs=1 count="${RS_REPLY##* }" of="$RS_BODY_FILE" <&9 2>/dev/null &&
			dd bs=1 count=2 of=/dev/null <&9 2>/dev/null
		;;
	esac
}

# rs_read, but nc is ended after SECONDS without a reply: nc does not notice a connection the
# server closed until it writes to it, so a lost reply would be waited for forever.
_rs_read_within() { # SECONDS
	(
		exec 8>&- 9<&-
		trap 'kill "$_rs_sleep" 2>/dev/null; exit' TERM
		sleep "$1" &
		_rs_sleep=$!
		wait "$_rs_sleep" && kill "$RS_NC_PID"
	) >/dev/null 2>&1 &
	_rs_watchdog=$!
	rs_read
	_rs_read_status=$?
	kill "$_rs_watchdog" 2>/dev/null
	return $_rs_read_status
}

# Any command line (no body); prints the reply line, and a body if it has one.
rs_cmd() { # LINE
	_rs_send "$1" && rs_read || return
	printf '%s\n' "$RS_REPLY"
	cat "$RS_BODY_FILE"
}

# No `local` in POSIX sh: each function's variables have names of their own.
_rs_call() { # EXPECTED-WORD LINE [BODY-FILE]: 0 when the reply's first word is EXPECTED-WORD
	_rs_call_word=$1
	shift
	_rs_send "$@" && rs_read || return
	case $RS_REPLY in
	"$_rs_call_word" | "$_rs_call_word "*) return 0 ;;
	esac
	echo "redstalk: $RS_REPLY" >&2
	return 1
}

rs_use() { _rs_call USING "use $1" && _rs_used=$1; }
rs_watch() { _rs_call WATCHING "watch $1" && _rs_unwatched "$1" && _rs_watched="$_rs_watched $1"; }
rs_ignore() { _rs_call WATCHING "ignore $1" && _rs_unwatched "$1"; }

_rs_unwatched() { # TUBE: takes it out of the watched tubes remembered (names have no spaces)
	_rs_left=
	for _rs_tube in $_rs_watched; do
		[ "$_rs_tube" = "$1" ] || _rs_left="$_rs_left $_rs_tube"
	done
	_rs_watched=${_rs_left# }
}

_rs_with_body() { # FUNCTION BODY [ARGS]: runs FUNCTION FILE [ARGS], the file holding BODY
	[ -n "$RS_DIR" ] || { echo "redstalk: not connected (rs_connect)" >&2; return 2; }
	_rs_with_body_function=$1
	printf '%s' "$2" >"$RS_DIR/put"
	shift 2
	"$_rs_with_body_function" "$RS_DIR/put" "$@"
}

rs_put() { _rs_with_body rs_put_file "$@"; }           # BODY [PRI [DELAY [TTR]]]: prints the id
rs_put_with() { _rs_with_body rs_put_with_file "$@"; } # BODY KEY [EXPIRE [ON-EXPIRY [PRI [DELAY [TTR]]]]]

rs_put_file() { # FILE [PRI [DELAY [TTR]]]: prints the id; the file's bytes as they are
	_rs_put_size=$(wc -c <"$1") || return 2
	_rs_call INSERTED "put ${2:-1024} ${3:-0} ${4:-60} $((_rs_put_size))" "$1" || return
	echo "${RS_REPLY#INSERTED }"
}

# put-with: KEY '-' for none; EXPIRE seconds (0: never) after which a job no reserve took is
# deleted or buried (ON-EXPIRY). Prints the id; returns 3 for DUPLICATE (nothing stored, the
# id is the job first put with KEY). A lost reply is retried (see RS_PUT_ATTEMPTS) when there is a key.
rs_put_with_file() { # FILE KEY [EXPIRE [ON-EXPIRY [PRI [DELAY [TTR]]]]]
	_rs_put_with_size=$(wc -c <"$1") || return 2
	_rs_put_with_line="put-with $2 ${3:-0} ${4:-delete} ${5:-1024} ${6:-0} ${7:-60} $((_rs_put_with_size))"
	_rs_put_with_sends=1
	until _rs_send "$_rs_put_with_line" "$1" && _rs_read_within "$RS_PUT_TIMEOUT"; do
		# Whether the job was stored is unknown: only a key makes sending it again safe.
		[ "$2" != - ] && [ "$_rs_put_with_sends" -lt "$RS_PUT_ATTEMPTS" ] || return 2
		echo "redstalk: sending put-with $2 again" >&2
		sleep $((RS_PUT_DELAY * _rs_put_with_sends))
		_rs_put_with_sends=$((_rs_put_with_sends + 1))
		_rs_reopen || [ $? -eq 2 ] || return 1 # a connection refused is one more attempt
	done
	case $RS_REPLY in
	'INSERTED '*) echo "${RS_REPLY#* }" ;;
	'DUPLICATE '*)
		echo "${RS_REPLY#* }"
		return 3
		;;
	*)
		echo "redstalk: $RS_REPLY" >&2
		return 1
		;;
	esac
}

rs_reserve() { # [TIMEOUT]: sets RS_JOB_ID, the body is in $RS_BODY_FILE (rs_body prints it)
	if [ $# -gt 0 ]; then _rs_call RESERVED "reserve-with-timeout $1"; else _rs_call RESERVED reserve; fi || return
	RS_JOB_ID=${RS_REPLY#RESERVED }
	RS_JOB_ID=${RS_JOB_ID%% *}
}

rs_body() { cat "$RS_BODY_FILE"; }

rs_delete() { _rs_call DELETED "delete $1"; }
rs_release() { _rs_call RELEASED "release $1 ${2:-1024} ${3:-0}"; } # ID [PRI [DELAY]]
rs_bury() { _rs_call BURIED "bury $1 ${2:-1024}"; }                  # ID [PRI]
rs_touch() { _rs_call TOUCHED "touch $1"; }
rs_tube_set() { _rs_call OK "tube-set $1 $2 $3"; } # TUBE max-reserved|reserve-rate|dedup-window VALUE

# Stats: print the YAML document.
_rs_yaml() { _rs_call OK "$1" && rs_body; }
rs_stats() { _rs_yaml stats; }
rs_stats_tube() { _rs_yaml "stats-tube $1"; }
rs_stats_job() { _rs_yaml "stats-job $1"; }
rs_stats_room() { _rs_yaml "stats-room $1"; }

# One value of a YAML document on stdin, unquoted: rs_stats_tube t | rs_field current-jobs-ready
rs_field() { sed -n "s/^$1: \"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p"; }

# Waiting rooms: enter and check print ENTERED / READY / WAITING <position> <eta-seconds>.
_rs_room() { # INSIDE-WORD LINE
	_rs_send "$2" && rs_read || return
	case $RS_REPLY in
	"$1" | 'WAITING '*)
		echo "$RS_REPLY"
		return 0
		;;
	esac
	echo "redstalk: $RS_REPLY" >&2
	return 1
}
rs_enter() { _rs_room ENTERED "enter $1 $2"; } # ROOM USER
rs_check() { _rs_room READY "check $1 $2"; }   # ROOM USER
rs_leave() { _rs_call LEFT "leave $1 $2"; }    # ROOM USER
rs_room_config() { _rs_call OK "room-config $1 $2 $3 $4 $5"; } # ROOM CAPACITY CHECKIN PARTICIPANT GRACE

# The command line: one connection per call.
_rs_usage() {
	cat >&2 <<'EOF'
usage: redstalk.sh COMMAND [ARGS]     (server: $REDSTALK_SERVER, host:port)
  put [-t TUBE] [-p PRI] [-d DELAY] [-r TTR] [-k KEY] [-e EXPIRE [-x delete|bury]] BODY|-
                                    insert a job ('-': body from stdin); prints its id. With -k, -e or -x:
                                    put-with (exit 3: DUPLICATE, the id is KEY's job; a lost reply is retried)
  reserve [-t TUBE] [-w SECONDS]    take a job: print its body, delete it (exit 1: none in time)
  work [-t TUBE] [-w SECONDS] [-D DELAY] COMMAND...
                                    run COMMAND with a job's body on stdin: delete the job when it
                                    succeeds, else release it with DELAY seconds (default 5)
  delete ID | stats | stats-tube TUBE | stats-job ID
  tube-set TUBE max-reserved|reserve-rate|dedup-window VALUE
  enter ROOM USER | check ROOM USER | leave ROOM USER | stats-room ROOM
  raw 'COMMAND LINE'                send any command; print its reply (and body)
EOF
	return 2
}

_rs_tube_opts() { # parses -t -w -p -d -r -D -k -e -x into _t _w _p _d _r _D _k _e _x; _shift: how many were taken
	_t=default _w= _p=1024 _d=0 _r=60 _D=5 _k= _e= _x=
	OPTIND=1
	while getopts t:w:p:d:r:D:k:e:x: _o "$@"; do
		case $_o in
		t) _t=$OPTARG ;; w) _w=$OPTARG ;; p) _p=$OPTARG ;; d) _d=$OPTARG ;; r) _r=$OPTARG ;; D) _D=$OPTARG ;;
		k) _k=$OPTARG ;; e) _e=$OPTARG ;; x) _x=$OPTARG ;;
		*) return 2 ;;
		esac
	done
	_shift=$((OPTIND - 1))
}

_rs_take() { # watch the tube (only) and reserve from it
	if [ "$_t" != default ]; then rs_watch "$_t" && rs_ignore default || return; fi
	if [ -n "$_w" ]; then rs_reserve "$_w"; else rs_reserve; fi
}

_rs_main() {
	[ $# -gt 0 ] || { _rs_usage; return; }
	_cmd=$1
	shift
	rs_connect || return
	case $_cmd in
	put)
		_rs_tube_opts "$@" || { _rs_usage; return; }
		shift $_shift
		[ $# -eq 1 ] || { _rs_usage; return; }
		rs_use "$_t" || return
		if [ "$1" = - ]; then cat >"$RS_DIR/put" || return 2; else printf '%s' "$1" >"$RS_DIR/put"; fi
		if [ -n "$_k$_e$_x" ]; then
			rs_put_with_file "$RS_DIR/put" "${_k:--}" "${_e:-0}" "${_x:-delete}" "$_p" "$_d" "$_r"
		else
			rs_put_file "$RS_DIR/put" "$_p" "$_d" "$_r"
		fi
		;;
	reserve)
		_rs_tube_opts "$@" || { _rs_usage; return; }
		_rs_take && rs_body && rs_delete "$RS_JOB_ID"
		;;
	work)
		_rs_tube_opts "$@" || { _rs_usage; return; }
		shift $_shift
		[ $# -gt 0 ] || { _rs_usage; return; }
		_rs_take || return
		if "$@" <"$RS_BODY_FILE"; then
			rs_delete "$RS_JOB_ID"
		else
			_status=$?
			rs_release "$RS_JOB_ID" 1024 "$_D"
			return $_status
		fi
		;;
	delete) rs_delete "$1" ;;
	stats) rs_stats ;;
	stats-tube) rs_stats_tube "$1" ;;
	stats-job) rs_stats_job "$1" ;;
	tube-set) rs_tube_set "$1" "$2" "$3" ;;
	stats-room) rs_stats_room "$1" ;;
	enter) rs_enter "$1" "$2" ;;
	check) rs_check "$1" "$2" ;;
	leave) rs_leave "$1" "$2" ;;
	raw) rs_cmd "$1" ;;
	*) _rs_usage ;;
	esac
}

case ${0##*/} in
redstalk.sh | redstalk)
	_rs_main "$@"
	_rs_status=$?
	rs_close
	exit $_rs_status
	;;
esac
