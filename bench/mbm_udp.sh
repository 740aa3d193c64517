#!/usr/bin/env bash
# The UDP pacer of sonde mbm (--mode udp) against the udp bench's STAMP
# sender, in one invocation, on one veth path between two network
# namespaces (root needed). A report, not a test: it exits 0 whatever the
# figures, non-zero only when a tool fails.
#
# Rows:
#   A  sonde udp's sender at 10,000 probes/s (100 µs) for BENCH_DURATION s:
#      its send-schedule error p50/p99/max (bench/udp.sh's row A).
#   B  sonde mbm 8.1.1 at 100 Mbit/s (1472-byte datagrams every 120 µs),
#      target RTT 10 ms (W 87, R 22707: the SPRT PASSes after about 22,000
#      packets, 2.7 s): its send-schedule error p50/p99/max, missed
#      deadlines, sustained rate and verdict. Goal: p99 < 50 µs.
# Environment: BENCH_DURATION (10), MBM_RATE (100M), MBM_RTT (10ms), GO (go).
set -u -o pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${BENCH_DURATION:-10}
RATE=${MBM_RATE:-100M}
RTT=${MBM_RTT:-10ms}
GO=${GO:-go}
[ "$(id -u)" = 0 ] || { echo "bench/mbm_udp.sh needs root (network namespaces)" >&2; exit 1; }

tmp=$(mktemp -d)
suffix=$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
A=sondema$suffix B=sondemb$suffix
cleanup() {
	[ -n "${srvpid:-}" ] && kill "$srvpid" 2>/dev/null
	wait 2>/dev/null
	ip netns delete "$A" 2>/dev/null
	ip netns delete "$B" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

$GO build -o "$tmp/udpbench" ./bench/udpbench || exit 1
$GO build -o "$tmp/sonde" ./cmd/sonde || exit 1
veth_pair "$A" "$B" "$suffix" 198.18.251 || exit 1

# One sonde server: the STAMP reflector and the MBM sink.
ip netns exec "$B" "$tmp/udpbench" -serve 198.18.251.2:8080 -udp 198.18.251.2:8862 2>"$tmp/server.log" & srvpid=$!
sleep 1

echo "A: sonde udp sender, 100 µs, ${DUR}s" >&2
ip netns exec "$A" "$tmp/udpbench" -server 198.18.251.2:8080 -i 100us -t "${DUR}s" -json "$tmp/udp.json" || exit 1
echo "B: sonde mbm 8.1.1 at $RATE, RTT $RTT" >&2
ip netns exec "$A" "$tmp/sonde" mbm 198.18.251.2:8080 --rate "$RATE" --rtt "$RTT" --tests 8.1.1 --json "$tmp/mbm.json" -q
code=$?
[ -s "$tmp/mbm.json" ] || { echo "sonde mbm: exit $code, no result" >&2; exit 1; }

python3 - "$tmp/udp.json" "$tmp/mbm.json" <<'PY'
import json, sys
udp = json.load(open(sys.argv[1]))["flows"][0]["schedule_error_us"]
m = json.load(open(sys.argv[2]))
t = m["tests"][0]
u = t.get("udp") or {}  # the UDP test's own figures (model.MBMUDP)
print("send-schedule error (goal p99 < 50 µs)")
print("  A  sonde udp, 10,000 probes/s:     p50 %6.1f µs  p99 %6.1f µs  max %8.1f µs  (n %d)" % (udp["p50"], udp["p99"], udp["max"], udp["n"]))
print("  B  sonde mbm 8.1.1, %5.0f Mbit/s: p50 %6.1f µs  p99 %6.1f µs  max %8.1f µs  (n %d, %d missed)" % (
    m["target"]["rate_bps"] / 1e6, u.get("schedule_error_p50_us", 0), u.get("schedule_error_p99_us", 0),
    u.get("schedule_error_max_us", 0), u.get("deadlines", 0), u.get("missed_deadlines", 0)))
print("     sent %d packets, sustained %.2f Mbit/s (mean %.2f); %s after %d packets: %s" % (
    u.get("packets_sent", 0), u.get("sender_min_rate_bps", 0) / 1e6, u.get("sender_rate_bps", 0) / 1e6,
    t["verdict"], t["packets"], t.get("reason", "")))
PY
