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
# machine may be shared: read the ratio, not the absolute rates).
#
# Environment: BENCH_REPEAT (5), BENCH_SECONDS (5), SONDE (bin/sonde).
set -u -o pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
REPEAT=${BENCH_REPEAT:-5}
SECONDS_=${BENCH_SECONDS:-5}
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer, got '$REPEAT'"
[[ $SECONDS_ =~ ^[1-9][0-9]*$ ]] || die "BENCH_SECONDS must be a positive integer, got '$SECONDS_'"
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

# run PORT ARGS... prints the receiver's bit/s of one iperf3 test.
run() {
	local port=$1
	shift
	iperf3 -c 127.0.0.1 -p "$port" -P 4 -t "$SECONDS_" -J "$@" >"$TMP/out.json" || {
		echo "iperf3 -p $port $* failed:" >&2
		cat "$TMP/out.json" >&2
		exit 1
	}
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"])' "$TMP/out.json"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A res
for dir in up down; do
	args=()
	[[ $dir == down ]] && args=(-R)
	for r in $(seq "$REPEAT"); do
		if ((r % 2)); then order="sonde iperf3"; else order="iperf3 sonde"; fi
		for peer in $order; do
			port=$PS
			[[ $peer == iperf3 ]] && port=$PI
			v=$(run "$port" "${args[@]}") || exit 1
			res[$dir.$peer]+="$v "
			sleep 0.5
		done
	done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${res[up.sonde]}" "${res[up.iperf3]}" "${res[down.sonde]}" "${res[down.iperf3]}" <<'PY'
import statistics, sys
v = [list(map(float, a.split())) for a in sys.argv[1:]]
print("%-10s %16s %16s %8s" % ("direction", "sonde serve", "iperf3 -s", "ratio"))
for name, s, i in (("upload", v[0], v[1]), ("download", v[2], v[3])):
    ms, mi = statistics.median(s), statistics.median(i)
    print("%-10s %13.2f Gb %13.2f Gb %8.3f   (bar: >= 0.95)" % (name, ms / 1e9, mi / 1e9, ms / mi))
    print("  runs sonde:  " + " ".join("%.2f" % (x / 1e9) for x in s))
    print("  runs iperf3: " + " ".join("%.2f" % (x / 1e9) for x in i))
PY
