# One perftest server/client pair on 127.0.0.1, for scripts/compare-perftest and
# scripts/sweep (sourced). The caller sets DEVICE (the -d device), WORK (a directory for the
# pair's output) and port (the last TCP port used; each pair takes the next).
# shellcheck shell=bash

# listening PORT: something listens on TCP PORT.
listening() {
	local hex
	hex=$(printf ':%04X' "$1")
	awk -v p="$hex" 'NR > 1 && substr($2, length($2) - 4) == p && $4 == "0A" { found = 1 } END { exit !found }' /proc/net/tcp
}

# run_pair BIN ARGS...: runs BIN as the server and as its client (same ARGS) and leaves the
# client's output in $WORK/cli.out and cli.err (the server's in srv.out, srv.err).
run_pair() {
	local bin=$1
	shift
	port=$((port + 1))
	timeout 300 "$bin" -d "$DEVICE" -p "$port" "$@" >"$WORK/srv.out" 2>"$WORK/srv.err" &
	local srv=$! i=0
	until listening "$port"; do
		i=$((i + 1))
		if ((i > 600)) || ! kill -0 "$srv" 2>/dev/null; then break; fi
		sleep 0.05
	done
	timeout 300 "$bin" -d "$DEVICE" -p "$port" "$@" 127.0.0.1 >"$WORK/cli.out" 2>"$WORK/cli.err" || true
	wait "$srv" || true
}

# results FIELD: the client's result lines (size, iterations, then numbers) as
# "SIZE VALUE" with VALUE its FIELDth column; nothing if any such value is not a number
# (Debian's perftest prints inf, or no report, when it fails to measure its clock) or if
# there are fewer than MEASURE_LINES of them (default 1; a run of several sizes whose
# server or client stopped part way, as perftest exits when it cannot measure its clock).
results() {
	awk -v f="$1" -v want="${MEASURE_LINES:-1}" '/^ [0-9]+ +[0-9]+ / { if ($f !~ /^[0-9.]+$/) bad = 1; n++; out = out $1 " " $f "\n" }
		END { if (!bad && n >= want) printf "%s", out }' "$WORK/cli.out"
}

# measure FIELD BIN ARGS...: run_pair, then the results of FIELD; repeated up to 5 times
# while there are none.
measure() {
	local field=$1 v attempt
	shift
	for attempt in 1 2 3 4 5; do
		run_pair "$@"
		v=$(results "$field")
		if [[ -n $v ]]; then
			echo "$v"
			return
		fi
		echo "  (${1##*/} ${*:2}: no result, attempt $attempt: $(tr '\n' ' ' <"$WORK/cli.err" | cut -c1-120))" >&2
	done
}
