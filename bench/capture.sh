#!/usr/bin/env bash
# Live capture: the highest packet rate sonde capture sustains with no
# kernel drop, with one worker and with two. A report, not a test: it exits
# 0 whatever the figures, 2 when it cannot run here.
#
# Two namespaces (sondecapA$$, sondecapB$$) joined by a veth pair in
# 198.18.250.0/24 (IPv6 off, so nothing else crosses it). In A,
# bench/capgen sends generated TCP traffic (BENCH_FLOWS connections at once:
# handshakes, 100-byte data segments with timestamps one way, ACKs the
# other) as raw Ethernet frames with sendmmsg, paced to a rate, for
# BENCH_SECONDS; its frames go to a MAC address that is not B's, so B's IP
# stack drops them after the packet sockets. In B, sonde capture -i vb...
# --workers W --ring BENCH_RING "tcp" captures and analyses them and stops by
# itself 2 s after the generator.
#
# Pinning (2 cores): capgen on core 0 (the veth delivers on the sender's
# core, so the kernel's side of the capture, the filter and the copy into
# the ring, runs there too); sonde with one worker on core 1 (GOMAXPROCS=1),
# with two workers on cores 0 and 1 (GOMAXPROCS=2). The machine may be
# shared: the load average is printed before and after.
#
# Rates step up through BENCH_RATES until a run drops packets (or the
# generator reaches less than 90 % of the rate and no more than before:
# the sender is the limit),
# then BENCH_BISECT runs bisect between the last clean rate and the first
# one that dropped. A run is clean when the kernel dropped nothing and the
# counts close: sent = kernel received = analysed + dropped + unread; its
# rate is the one the generator reached. The ring is sonde's default (32
# MiB a worker in 256 blocks: about 160 000 of these packets, 0.4 s at
# 400 000 packets/s; at low rates at least 2.56 s, a block being handed
# over when full or 10 ms old). The column us/pkt is
# sonde's CPU time (user + sys) per packet analysed: the capacity of one
# core is about 1e6 / us/pkt packets/s when sonde has it to itself; under
# load, drops come first from the time sonde waits for a core.
#
# Environment: SONDE (bin/sonde), BENCH_RATES, BENCH_SECONDS (5),
# BENCH_RING (32MiB), BENCH_FLOWS (1000), BENCH_BISECT (3), BENCH_WORKERS
# ("1 2").
set -u -o pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
RATES=${BENCH_RATES:-"100000 200000 300000 400000 600000 800000 1000000 1300000 1600000 2000000"}
SECS=${BENCH_SECONDS:-5}
RING=${BENCH_RING:-32MiB}
FLOWS=${BENCH_FLOWS:-1000}
BISECT=${BENCH_BISECT:-3}
WORKERS=${BENCH_WORKERS:-"1 2"}

((EUID == 0)) || die "needs root (namespaces, AF_PACKET)"
[[ -x $SONDE ]] || die "$SONDE not found: run 'make build'"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not installed (Debian package time)"
for t in ip taskset python3 go; do
	command -v $t >/dev/null || die "$t not installed"
done
[[ $SECS =~ ^[1-9][0-9]*$ ]] && ((SECS <= 60)) || die "BENCH_SECONDS must be 1 to 60, got '$SECS'"
[[ $BISECT =~ ^[0-9]+$ ]] && ((BISECT <= 10)) || die "BENCH_BISECT must be 0 to 10, got '$BISECT'"
for r in $RATES; do
	[[ $r =~ ^[1-9][0-9]*$ ]] && ((r <= 5000000)) || die "BENCH_RATES: $r is not a rate of 1 to 5000000 packets/s"
done
(($(nproc) >= 2)) || die "needs 2 cores"

WORK=$(mktemp -d)
A=sondecapA$$
B=sondecapB$$
SUF=c$$
cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
go build -o "$WORK/capgen" ./bench/capgen || die "cannot build bench/capgen"
veth_pair "$A" "$B" "$SUF" 198.18.250 || die "cannot make the veth pair"
for ns in "$A" "$B"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip netns exec "$B" sysctl -qw "net.ipv6.conf.vb$SUF.disable_ipv6=1"
ip netns exec "$A" sysctl -qw "net.ipv6.conf.va$SUF.disable_ipv6=1"

# run W RATE: one capture of RATE packets/s by W workers; prints a table
# row and sets CLEAN (1 or 0) and GOT (the rate the generator reached).
run() {
	local w=$1 rate=$2 cpus=1
	((w > 1)) && cpus=0,1
	rm -f "$WORK"/{out.json,err,time,gen.json}
	ip netns exec "$B" env GOMAXPROCS="$w" taskset -c $cpus /usr/bin/time -f "%U %S %M" -o "$WORK/time" \
		"$SONDE" capture -i "vb$SUF" --workers "$w" --ring "$RING" -t "$((SECS + 5))s" --json "$WORK/out.json" -q tcp \
		2>"$WORK/err" &
	local pid=$! i
	for ((i = 0; i < 100; i++)); do
		grep -q "capturing on" "$WORK/err" 2>/dev/null && break
		sleep 0.1
	done
	sleep 0.2
	ip netns exec "$A" taskset -c 0 "$WORK/capgen" -i "va$SUF" -rate "$rate" -n "$((rate * SECS))" \
		-t "$((SECS + 2))s" -flows "$FLOWS" >"$WORK/gen.json" || die "capgen failed"
	wait $pid
	python3 - "$w" "$rate" "$WORK" <<'PY'
import json, sys
w, rate, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
gen = json.load(open(d + "/gen.json"))
try:
    res = json.load(open(d + "/out.json"))
except Exception as e:
    print("sonde capture wrote no result:", e, open(d + "/err").read(), file=sys.stderr)
    sys.exit(1)
lv = res["live"]
user, sys_, rss = open(d + "/time").read().split()[-3:]
sent, rec, an, dr, un = gen["sent"], lv["kernel_received"], res["packets"], lv["kernel_dropped"], lv["unread"]
closes = sent == rec == an + dr + un
reached = gen["rate"] >= 0.9 * rate
clean = dr == 0 and closes
cpu = float(user) + float(sys_)
verdict = "clean" if clean else "DROPS" if dr else "COUNTS"
if not reached:
    verdict += " (sender short)"
print(f"{w:>7} {rate:>9} {gen['rate']:>9.0f} {sent:>9} {rec:>9} {an:>9} {dr:>8} {lv['kernel_ring_full']:>5} {un:>6} {'yes' if closes else 'NO':>6} {cpu:>6.2f} {1e6 * cpu / max(an, 1):>6.3f} {verdict}")
open(d + "/verdict", "w").write(f"{1 if clean else 0} {gen['rate']:.0f} {1 if reached else 0}")
PY
	read -r CLEAN GOT REACHED <"$WORK/verdict"
}

echo "sonde capture on a veth pair: $SECS s a run, ${FLOWS} connections, ring $RING per worker, $(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%7s %9s %9s %9s %9s %9s %8s %5s %6s %6s %6s %6s %s\n" workers rate sent/s sent received analysed dropped full unread counts cpu_s us/pkt verdict
declare -A BEST
for w in $WORKERS; do
	best=0 lo=0 hi=0
	for r in $RATES; do
		run "$w" "$r"
		if ((CLEAN)); then
			# A sender short of the rate ends the steps once it no
			# longer gets faster (a busy machine slows it for a while).
			((REACHED || GOT > best)) || break
			((GOT > best)) && best=$GOT
			lo=$r
		else
			hi=$r
			break
		fi
	done
	if ((hi > 0)); then
		for ((i = 0; i < BISECT; i++)); do
			mid=$(((lo + hi) / 2))
			((mid > lo && mid < hi)) || break
			run "$w" "$mid"
			if ((CLEAN)); then
				((GOT > best)) && best=$GOT
				lo=$mid
			else
				hi=$mid
			fi
		done
	fi
	BEST[$w]="$best"
	[[ $hi == 0 ]] && BEST[$w]="$best (none dropped: the sender or BENCH_RATES was the limit)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in $WORKERS; do
	echo "highest rate with no kernel drop, $w worker(s): ${BEST[$w]} packets/s"
done
