#!/usr/bin/env bash
# UDP quality benchmark of sonde's STAMP probes against ping and irtt on one
# veth path between two network namespaces (root needed). A report, not a
# test: it exits 0 whatever the figures, non-zero only when a tool fails.
#
# Rows:
#   A  sonde at 10,000 probes/s (100 µs) for BENCH_DURATION s, with ping at
#      10 ms on the same path at the same time: sonde's send-schedule error
#      (p50/p99/max, goal p99 < 50 µs) and its RTT against ping's (goal:
#      sonde median − ping median ≤ 30 µs).
#   B  irtt at 10,000 packets/s for the same time, with ping beside it: the
#      same figures from irtt's own output.
#   C  sonde, irtt and ping, each every 10 ms, at the same time: the three
#      RTT distributions side by side.
# Environment: BENCH_DURATION (10), IRTT (irtt), GO (go).
set -u -o pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${BENCH_DURATION:-10}
IRTT=${IRTT:-irtt}
GO=${GO:-go}
[ "$(id -u)" = 0 ] || { echo "bench/udp.sh needs root (network namespaces)" >&2; exit 1; }
command -v "$IRTT" >/dev/null || { echo "irtt not found: apt-get install -y irtt" >&2; exit 1; }

tmp=$(mktemp -d)
suffix=$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
A=sondeua$suffix B=sondeub$suffix
cleanup() {
	[ -n "${srvpid:-}" ] && kill "$srvpid" 2>/dev/null
	[ -n "${irttpid:-}" ] && kill "$irttpid" 2>/dev/null
	wait 2>/dev/null
	ip netns delete "$A" 2>/dev/null
	ip netns delete "$B" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

$GO build -o "$tmp/udpbench" ./bench/udpbench || exit 1
veth_pair "$A" "$B" "$suffix" 198.18.250 || exit 1

ip netns exec "$B" "$tmp/udpbench" -serve 198.18.250.2:8080 -udp 198.18.250.2:8862 2>"$tmp/server.log" & srvpid=$!
ip netns exec "$B" "$IRTT" server -b 198.18.250.2:2112 -i 0 -d 0 -l 0 >"$tmp/irtt-server.log" 2>&1 & irttpid=$!
sleep 1

pings() { # count interval out
	ip netns exec "$A" ping -n -q -c "$1" -i "$2" 198.18.250.2 >/dev/null 2>&1 # warm ARP
	ip netns exec "$A" ping -n -c "$1" -i "$2" 198.18.250.2 >"$3" 2>&1
}
n10=$((DUR * 100))

echo "A: sonde 100 µs + ping 10 ms, ${DUR}s" >&2
pings "$n10" 0.01 "$tmp/ping-a.txt" & p=$!
ip netns exec "$A" "$tmp/udpbench" -server 198.18.250.2:8080 -i 100us -t "${DUR}s" -json "$tmp/sonde-a.json" || exit 1
wait $p

echo "B: irtt 100 µs + ping 10 ms, ${DUR}s" >&2
pings "$n10" 0.01 "$tmp/ping-b.txt" & p=$!
ip netns exec "$A" "$IRTT" client -Q -i 100us -d "${DUR}s" -l 64 --timer=hybrid:0.95 -o "$tmp/irtt-b.json" 198.18.250.2:2112 || exit 1
wait $p

echo "C: sonde, irtt, ping every 10 ms, ${DUR}s" >&2
pings "$n10" 0.01 "$tmp/ping-c.txt" & p=$!
ip netns exec "$A" "$IRTT" client -Q -i 10ms -d "${DUR}s" -l 64 -o "$tmp/irtt-c.json" 198.18.250.2:2112 & q=$!
ip netns exec "$A" "$tmp/udpbench" -server 198.18.250.2:8080 -i 10ms -t "${DUR}s" -json "$tmp/sonde-c.json" || exit 1
wait $p $q

BENCH_DURATION=$DUR python3 bench/udp_report.py "$tmp"
