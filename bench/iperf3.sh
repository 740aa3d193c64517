#!/usr/bin/env bash
# iperf3 clients against sonde serve's iperf3 server and against iperf3's
# own (iperf3 -s), on the same loopback in the same run: the bar is that
# sonde serve gives at least 0.95× iperf3 -s's goodput (issue 22), both
# ways. A report, not a test: it exits 0 whatever the figures, non-zero
# only when a tool fails to run.
#
# What runs, BENCH_REPEAT rounds (peers alternate within a round, the
# order flipping every round):
#   iperf3 -c 127.0.0.1 -p PORT -P 4 -t BENCH_SECONDS -J      (upload)
#   iperf3 -c 127.0.0.1 -p PORT -P 4 -t BENCH_SECONDS -R -J   (download)
# against `sonde serve --iperf3-port PORT_S` and `iperf3 -s -p PORT_I`.
# The figure is end.sum_received.bits_per_second; the table shows the
# medians and their ratio, and the load average before and after (the
# machine may be shared: read the ratio, not the absolute rates). Beside
# it, each server's CPU (user+system, from /proc) per GB received: the
# sender's cost in downloads, the receiver's in uploads; and the iperf3
# client's (the other end), which the server's socket options move too.
#
# Environment: BENCH_REPEAT (5), BENCH_SECONDS (5), BENCH_DIRECTIONS
# ("up down"), SONDE (bin/sonde).
set -u -o pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
REPEAT=${BENCH_REPEAT:-5}
SECONDS_=${BENCH_SECONDS:-5}
DIRS=${BENCH_DIRECTIONS:-up down}
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer, got '$REPEAT'"
[[ $SECONDS_ =~ ^[1-9][0-9]*$ ]] || die "BENCH_SECONDS must be a positive integer, got '$SECONDS_'"
for d in $DIRS; do [[ $d == up || $d == down ]] || die "BENCH_DIRECTIONS takes up and down, got '$d'"; done
HZ=$(getconf CLK_TCK)
command -v iperf3 >/dev/null || die "iperf3 is not installed (make apt-deps)"
[[ -x $SONDE ]] || die "$SONDE not built (make build)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PS=$(free_port)
PI=$(free_port)
HP=$(free_port)
TMP=$(mktemp -d)
cleanup() {
	[[ -n ${SPID:-} ]] && kill "$SPID" 2>/dev/null
	[[ -n ${IPID:-} ]] && kill "$IPID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

"$SONDE" serve --addr "127.0.0.1:$HP" --iperf3-port "$PS" --udp-addr off --mbm-addr off \
	--max-duration 60s --db "$TMP/results.db" 2>"$TMP/sonde.log" &
SPID=$!
iperf3 -s -p "$PI" -B 127.0.0.1 >"$TMP/iperf3s.log" 2>&1 &
IPID=$!
for _ in $(seq 50); do
	grep -q "iperf3 server on" "$TMP/sonde.log" && break
	sleep 0.1
done
grep -q "iperf3 server on" "$TMP/sonde.log" || { cat "$TMP/sonde.log" >&2; exit 1; }
sleep 0.5

# cpu_ms PID prints the user+system CPU PID has used so far.
cpu_ms() {
	local f
	read -r -a f <"/proc/$1/stat" || return 1
	echo $(((f[13] + f[14]) * 1000 / HZ))
}

# run PORT ARGS... prints the receiver's bit/s of one iperf3 test, its
# bytes, and the iperf3 client's CPU milliseconds.
run() {
	local port=$1
	shift
	iperf3 -c 127.0.0.1 -p "$port" -P 4 -t "$SECONDS_" -J "$@" >"$TMP/out.json" || {
		echo "iperf3 -p $port $* failed:" >&2
		cat "$TMP/out.json" >&2
		exit 1
	}
	# run is a subshell of its own: its children's times are iperf3's.
	times >"$TMP/times"
	python3 -c 'import json, re, sys
s = json.load(open(sys.argv[1]))["end"]["sum_received"]
t = open(sys.argv[2]).read().split("\n")[1].split()  # children: user sys, as 1m2.345s
ms = sum(int(m) * 60000 + float(x) * 1000 for m, x in (re.match(r"(\d+)m([\d.]+)s", v).groups() for v in t))
print(s["bits_per_second"], s["bytes"], round(ms))' "$TMP/out.json" "$TMP/times"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A res cpu ccpu
for dir in $DIRS; do
	args=()
	[[ $dir == down ]] && args=(-R)
	for r in $(seq "$REPEAT"); do
		if ((r % 2)); then order="sonde iperf3"; else order="iperf3 sonde"; fi
		for peer in $order; do
			port=$PS pid=$SPID
			[[ $peer == iperf3 ]] && port=$PI pid=$IPID
			c0=$(cpu_ms "$pid") || exit 1
			v=$(run "$port" "${args[@]}") || exit 1
			c1=$(cpu_ms "$pid") || exit 1
			read -r bps bytes cms <<<"$v"
			res[$dir.$peer]+="$bps "
			# ms per byte * 1e9 / 1e3 = CPU seconds per GB
			cpu[$dir.$peer]+="$(awk "BEGIN{print ($c1 - $c0) * 1e6 / $bytes}") "
			ccpu[$dir.$peer]+="$(awk "BEGIN{print $cms * 1e6 / $bytes}") "
			sleep 0.5
		done
	done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${res[up.sonde]:-}" "${res[up.iperf3]:-}" "${res[down.sonde]:-}" "${res[down.iperf3]:-}" \
	"${cpu[up.sonde]:-}" "${cpu[up.iperf3]:-}" "${cpu[down.sonde]:-}" "${cpu[down.iperf3]:-}" \
	"${ccpu[up.sonde]:-}" "${ccpu[up.iperf3]:-}" "${ccpu[down.sonde]:-}" "${ccpu[down.iperf3]:-}" <<'PY'
import statistics, sys
v = [list(map(float, a.split())) for a in sys.argv[1:]]
print("%-10s %16s %16s %8s" % ("direction", "sonde serve", "iperf3 -s", "ratio"))
for k, name in enumerate(("upload", "download")):
    s, i, cs, ci = v[2 * k], v[2 * k + 1], v[4 + 2 * k], v[5 + 2 * k]
    if not s:
        continue
    ms, mi = statistics.median(s), statistics.median(i)
    print("%-10s %13.2f Gb %13.2f Gb %8.3f   (bar: >= 0.95)" % (name, ms / 1e9, mi / 1e9, ms / mi))
    print("  runs sonde:  " + " ".join("%.2f" % (x / 1e9) for x in s))
    print("  runs iperf3: " + " ".join("%.2f" % (x / 1e9) for x in i))
    mcs, mci = statistics.median(cs), statistics.median(ci)
    print("  server CPU s/GB: sonde %.3f, iperf3 %.3f, ratio %.2f" % (mcs, mci, mcs / mci))
    cs, ci = v[8 + 2 * k], v[9 + 2 * k]
    mcs, mci = statistics.median(cs), statistics.median(ci)
    print("  client CPU s/GB: against sonde %.3f, against iperf3 %.3f, ratio %.2f" % (mcs, mci, mcs / mci))
PY
