#!/usr/bin/env bash
# Loopback TCP benchmark of sonde against iperf3, and server memory under
# 50 concurrent tests. A report, not a test: it exits 0 whatever the ratios,
# and non-zero only when a tool fails to run.
#
# Goodput rows: download and upload, 1 and 4 streams. Each row runs
# BENCH_REPEAT times per tool, sonde and iperf3 alternating (the first of the
# pair alternates too: A B, B A, ...) so both share the machine's noise; the
# table shows the median of each tool and the ratio of the medians.
#
# What is compared, both measured at the receiver (see bench/tcp_report.py):
#   whole   the whole transfer of BENCH_DURATION seconds, slow start included:
#           sonde -t D (its load phase) against iperf3 -O 1 -t D-1 (1 s
#           omitted + D-1 s, the same D seconds of transfer).
#   steady  warm-up excluded: sonde's RFC 6349 window (after its detected
#           end of slow start) against iperf3 after its -O 1 omitted second.
# Downloads are iperf3 -R, so in both tools the server sends.
#
# On loopback goodput is bounded by CPU, so on a shared machine it moves with
# the load of other processes. The CPU each end spent per GB received (from
# /proc and the shell's child times) is printed too: it is much less
# sensitive to that noise, and it is what an optimisation should lower.
#
# Environment: BENCH_REPEAT (3), BENCH_DURATION (5, whole seconds, >= 2),
# BENCH_CLIENTS (50), BENCH_RSS_STREAMS (2 per client), BENCH_RSS_GOAL_MB
# (100), SONDE (bin/sonde).
set -u -o pipefail

cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
REPEAT=${BENCH_REPEAT:-3}
DUR=${BENCH_DURATION:-5}
CLIENTS=${BENCH_CLIENTS:-50}
RSS_STREAMS=${BENCH_RSS_STREAMS:-2}
RSS_GOAL_MB=${BENCH_RSS_GOAL_MB:-100}
REPORT="python3 bench/tcp_report.py"

[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer, got '$REPEAT'"
[[ $DUR =~ ^[0-9]+$ ]] && ((DUR >= 2)) || die "BENCH_DURATION must be whole seconds >= 2, got '$DUR'"
[[ $CLIENTS =~ ^[1-9][0-9]*$ ]] || die "BENCH_CLIENTS must be a positive integer, got '$CLIENTS'"
[[ $RSS_STREAMS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RSS_STREAMS must be a positive integer, got '$RSS_STREAMS'"
[[ -x $SONDE ]] || die "$SONDE not found: run 'make build' (or 'make bench')"
command -v iperf3 >/dev/null || die "iperf3 not installed (make apt-deps)"
command -v python3 >/dev/null || die "python3 not installed"
command -v ss >/dev/null || die "ss not installed (iproute2)"
HZ=$(getconf CLK_TCK)

WORK=$(mktemp -d /tmp/sonde-bench.XXXXXX)
# cleanup ends this shell's own background jobs (servers, clients, sampler):
# jobs -p lists only children not yet reaped, so no recycled PID is hit.
cleanup() {
	local i left
	left=$(jobs -p)
	[[ -n $left ]] && kill $left 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		[[ -z $(jobs -pr) ]] && break
		sleep 0.1
	done
	left=$(jobs -pr)
	[[ -n $left ]] && kill -KILL $left 2>/dev/null
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port [udp] prints a TCP (or UDP) port nobody uses on loopback now.
free_port() {
	python3 -c 'import socket, sys
s = socket.socket(type=socket.SOCK_DGRAM if sys.argv[1:] == ["udp"] else socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' "$@"
}

# wait_listen PORT PID: wait up to 5 s for PID to listen on PORT.
wait_listen() {
	local i
	for ((i = 0; i < 50; i++)); do
		kill -0 "$2" 2>/dev/null || return 1
		[[ -n $(ss -Hltn "sport = :$1") ]] && return 0
		sleep 0.1
	done
	return 1
}

# start_sonde PORT LOG: a sonde server in the background; sets SERVER_PID.
# Its STAMP reflector (if this build has one) gets a free loopback port, not
# the fixed default another server on the machine may hold.
start_sonde() {
	local udp=()
	"$SONDE" serve --help 2>/dev/null | grep -q -- --udp-addr && udp=(--udp-addr "127.0.0.1:$(free_port udp)")
	"$SONDE" serve --addr "127.0.0.1:$1" "${udp[@]}" --per-ip-rate off --max-concurrent 64 >"$2" 2>&1 &
	SERVER_PID=$!
	wait_listen "$1" "$SERVER_PID" || {
		cat "$2" >&2
		die "sonde server did not start on port $1"
	}
}

stop_server() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# proc_cpu_ms PID: sets CPU_MS to the user+system CPU PID has used so far.
proc_cpu_ms() {
	local f
	read -r -a f <"/proc/$1/stat" || return 1
	CPU_MS=$(((f[13] + f[14]) * 1000 / HZ))
}

# children_cpu_ms: sets CPU_MS to the user+system CPU of this shell's reaped
# children (timeout(1) waits for its command, so that is included). Builtins
# only: a forked helper would add its own time.
children_cpu_ms() {
	local u s t ms=0
	times >"$WORK/times"
	{
		read -r _ _
		read -r u s
	} <"$WORK/times"
	for t in "$u" "$s"; do # e.g. 1m2.345s
		local m=${t%%m*} x=${t#*m}
		x=${x%s}
		ms=$((ms + 10#$m * 60000 + 10#${x%.*} * 1000 + 10#${x#*.}))
	done
	CPU_MS=$ms
}

# measure SERVER_PID CMD...: runs CMD in the background and waits for it, so
# that a signal interrupts the wait at once (bash defers traps until a
# foreground command ends, and timeout(1) puts its command in a process group
# of its own that Ctrl-C does not reach). Sets CLIENT_MS and SERVER_MS to the
# CPU each side used; returns CMD's status.
measure() {
	local spid=$1 c0 s0 rc=0
	shift
	children_cpu_ms
	c0=$CPU_MS
	proc_cpu_ms "$spid"
	s0=$CPU_MS
	"$@" &
	wait $! || rc=$?
	children_cpu_ms
	CLIENT_MS=$((CPU_MS - c0))
	proc_cpu_ms "$spid"
	SERVER_MS=$((CPU_MS - s0))
	return $rc
}

TOOL_FAILURES=0

# run_sonde DIR STREAMS REP: one sonde test; appends its figures to runs.tsv.
run_sonde() {
	local out="$WORK/sonde-$1-$2-$3.json" fig rc=0
	measure "$SONDE_PID" timeout $((DUR + 40)) "$SONDE" test "127.0.0.1:$SPORT" --direction "$1" \
		--streams "$2" -t "${DUR}s" --json "$out" -q --no-progress --no-foreign-probes 2>"$out.err" || rc=$?
	if ((rc != 0)); then
		echo "  sonde  $1 $2 run $3: FAILED (exit $rc): $(tail -n 3 "$out.err")" >&2
		TOOL_FAILURES=$((TOOL_FAILURES + 1))
		return
	fi
	if ! fig=$($REPORT sonde "$out" "$1"); then
		TOOL_FAILURES=$((TOOL_FAILURES + 1))
		return
	fi
	record "$1" "$2" sonde "$3" "$fig"
}

# run_iperf3 DIR STREAMS REP: one iperf3 test; appends its figures to runs.tsv.
run_iperf3() {
	local out="$WORK/iperf3-$1-$2-$3.json" fig rev=() rc=0
	[[ $1 == download ]] && rev=(-R)
	measure "$IPERF_PID" timeout $((DUR + 40)) iperf3 -c 127.0.0.1 -p "$IPORT" -P "$2" "${rev[@]}" \
		-O 1 -t $((DUR - 1)) -J --get-server-output >"$out" 2>"$out.err" || rc=$?
	if ((rc != 0)); then
		echo "  iperf3 $1 $2 run $3: FAILED (exit $rc): $(tail -n 3 "$out.err") $($REPORT iperf3 "$out" "$1" 2>&1)" >&2
		TOOL_FAILURES=$((TOOL_FAILURES + 1))
		return
	fi
	if ! fig=$($REPORT iperf3 "$out" "$1"); then
		TOOL_FAILURES=$((TOOL_FAILURES + 1))
		return
	fi
	record "$1" "$2" iperf3 "$3" "$fig"
}

# record DIR STREAMS TOOL REP "WHOLE STEADY WINDOW BYTES": one line of
# runs.tsv, with the sender's and the receiver's CPU of the run.
record() {
	local whole steady win bytes snd rcv
	read -r whole steady win bytes <<<"$5"
	if [[ $1 == download ]]; then
		snd=$SERVER_MS rcv=$CLIENT_MS
	else
		snd=$CLIENT_MS rcv=$SERVER_MS
	fi
	echo "$1 $2 $3 $4 $whole $steady $win $bytes $snd $rcv" >>"$WORK/runs.tsv"
	printf '  %-8s %d  run %d  %-6s  steady %6.2f  whole %6.2f Gbit/s  cpu sender %5.2f s, receiver %5.2f s\n' \
		"$1" "$2" "$4" "$3" "$(awk "BEGIN{print $steady/1e9}")" "$(awk "BEGIN{print $whole/1e9}")" \
		"$(awk "BEGIN{print $snd/1000}")" "$(awk "BEGIN{print $rcv/1000}")"
}

echo "sonde loopback TCP benchmark: $($SONDE --version 2>/dev/null | head -n 1), $(iperf3 --version | head -n 1)"
echo "host: $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "runs: $REPEAT per tool per row, ${DUR} s each, sonde and iperf3 alternating"
echo

# ---- goodput ---------------------------------------------------------------
SPORT=$(free_port)
start_sonde "$SPORT" "$WORK/sonde-serve.log"
SONDE_PID=$SERVER_PID
IPORT=$(free_port)
# -J so the server's own JSON (the receiver's intervals of an upload) comes
# back to the client with --get-server-output.
iperf3 -s -J -p "$IPORT" >"$WORK/iperf3-serve.log" 2>&1 &
IPERF_PID=$!
wait_listen "$IPORT" "$IPERF_PID" || die "iperf3 server did not start on port $IPORT"

: >"$WORK/runs.tsv"
for ((rep = 1; rep <= REPEAT; rep++)); do
	for dir in download upload; do
		for n in 1 4; do
			if ((rep % 2)); then
				run_sonde "$dir" "$n" "$rep"
				run_iperf3 "$dir" "$n" "$rep"
			else
				run_iperf3 "$dir" "$n" "$rep"
				run_sonde "$dir" "$n" "$rep"
			fi
		done
	done
done
stop_server "$SONDE_PID"
stop_server "$IPERF_PID"
echo
$REPORT table "$WORK/runs.tsv" || TOOL_FAILURES=$((TOOL_FAILURES + 1))
echo

# ---- server memory under concurrent tests ----------------------------------
# Half the clients download, half upload, RSS_STREAMS each, with foreign probes
# (RPM) on as in a default test. On a 2-core machine they contend for CPU:
# this measures memory, not goodput.
MPORT=$(free_port)
start_sonde "$MPORT" "$WORK/sonde-rss.log"
RSS_PID=$SERVER_PID
rss_kb() { awk '/^'"$2"':/{print $2}' "/proc/$1/status" 2>/dev/null; }
IDLE_KB=$(rss_kb "$RSS_PID" VmRSS)
(
	for ((i = 0; i < (DUR + 60) * 10; i++)); do
		rss_kb "$RSS_PID" VmRSS || exit 0
		sleep 0.1
	done
) >"$WORK/rss.samples" &
SAMPLER=$!
CPIDS=()
for ((i = 0; i < CLIENTS; i++)); do
	dir=download
	((i % 2)) && dir=upload
	timeout $((DUR + 60)) "$SONDE" test "127.0.0.1:$MPORT" --direction "$dir" --streams "$RSS_STREAMS" \
		-t "${DUR}s" --json "$WORK/rss-$i.json" -q --no-progress 2>"$WORK/rss-$i.err" &
	CPIDS+=($!)
done
OK=0
for i in "${!CPIDS[@]}"; do
	rc=0
	wait "${CPIDS[$i]}" || rc=$?
	if ((rc == 0)); then
		OK=$((OK + 1))
	else
		echo "  client $i: FAILED (exit $rc): $(tail -n 2 "$WORK/rss-$i.err" | tr '\n' ' ')" >&2
	fi
done
HWM_KB=$(rss_kb "$RSS_PID" VmHWM)
kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
stop_server "$RSS_PID"
echo "$CLIENTS concurrent sonde tests, $RSS_STREAMS streams each, half download, half upload, ${DUR} s:"
$REPORT rss "$WORK/rss.samples" "${HWM_KB:-x}" "${IDLE_KB:-0}" "$OK" "$CLIENTS" "$RSS_GOAL_MB" ||
	TOOL_FAILURES=$((TOOL_FAILURES + 1))
((OK == CLIENTS)) || TOOL_FAILURES=$((TOOL_FAILURES + 1))

echo
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at end"
if ((TOOL_FAILURES > 0)); then
	echo "bench: $TOOL_FAILURES tool run(s) failed" >&2
	exit 1
fi
exit 0
