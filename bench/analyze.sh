#!/usr/bin/env bash
# Offline analysis speed of sonde analyze against tshark and tcptrace on the
# same capture, and sonde's memory for 1 M against 10 M packets of the same
# traffic. A report, not a test: it exits 0 whatever the figures, non-zero
# only when a tool fails to run.
#
# The capture (bench/analyzegen, cached in BENCH_CACHE, outside git): a
# nanosecond pcap, Ethernet, snap length 128, 50 000 packets per second of
# capture time, 2000 concurrent flows: 90 % TCP connections with
# timestamps, SACK and window scaling (70 % short exchanges of 4-64
# segments in trains of 1-8 packets, 20 % bulk transfers of 200-2200 in
# trains of 8-39, ACK every second segment, some retransmissions), 10 %
# QUIC-like UDP flows on port 443 with a spinning short header. The 1 M
# file is the first million packets of the same generator and seed (20 s of
# capture: flows are evicted in both).
#
# What runs, each pinned to one core (taskset -c 0) unless said:
#   sonde     GOMAXPROCS=1 sonde analyze --workers 1 FILE (text output:
#             every connection's counters and RTT summaries)
#   sonde-2w  the same on two cores (taskset -c 0,1, GOMAXPROCS=2,
#             --workers 2): the rate against one core's
#   sonde-mem-1M, -10M, -50M  sonde analyze (the text summary: every
#             connection, its record spilled to a temporary file as it
#             finishes) on the first 1 M, the 10 M and a 50 M capture of
#             the same traffic; sonde-json-10M with --json, sonde-nd-10M
#             with --ndjson /dev/null (records streamed, none kept): peak
#             RSS should be flat, bounded by the live flows. BENCH_FLAT=0
#             skips the 50 M file (6 GB in BENCH_CACHE).
#   sonde-pair two one-worker analyses of the 10 M capture at once, one
#             on each core: what two cores give work that is split with
#             no cost at all, the ceiling of any two-worker figure here
#             (its wall against sonde's, doubled).
#   corelat   bench/corelat, before each sonde-2w run: the round trip of a
#             cache line between cores 0 and 1. The workers hand packets
#             across cores: on a virtual machine whose two vCPUs do not
#             share a cache the round trip is ~400 ns, not ~80, and two
#             workers are far slower (docs/analyze.md, "Every core").
#   Then the JSON of one worker and of two on the 10 M capture are
#             compared (all but the runtime figures): they must be equal.
#   tcptrace  tcptrace -n -l FILE (long output, every connection)
#   tshark    tshark -r FILE -q -z conv,tcp: full dissection of every
#             packet (the tap needs it), one table at the end. On the 1 M
#             file unless BENCH_TSHARK_FULL=1 (it takes minutes on 10 M).
# Each runs BENCH_REPEAT times (tools alternate within a round); the table
# shows medians. Packets per second are given per wall second and per CPU
# second (user + sys): on a shared machine the CPU figure is the steadier.
#
# Environment: BENCH_REPEAT (3), BENCH_PACKETS (10000000), BENCH_CACHE
# (/var/tmp/sonde-bench), BENCH_TSHARK_FULL (0), SONDE (bin/sonde).
set -u -o pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
REPEAT=${BENCH_REPEAT:-3}
PACKETS=${BENCH_PACKETS:-10000000}
CACHE=${BENCH_CACHE:-/var/tmp/sonde-bench}
TSHARK_FULL=${BENCH_TSHARK_FULL:-0}
FLAT=${BENCH_FLAT:-1}

[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer, got '$REPEAT'"
[[ $PACKETS =~ ^[0-9]+$ ]] && ((PACKETS >= 1000000)) || die "BENCH_PACKETS must be >= 1000000, got '$PACKETS'"
[[ -x $SONDE ]] || die "$SONDE not found: run 'make build' (or 'make bench')"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not installed (Debian package time)"
for t in tshark tcptrace taskset python3 go; do
	command -v $t >/dev/null || die "$t not installed (make apt-deps)"
done

mkdir -p "$CACHE" || die "cannot create $CACHE"
# The name carries the generator's version: change it with the traffic.
BIG=$CACHE/analyze-v2-$PACKETS-seed1.pcap
SMALL=$CACHE/analyze-v2-1000000-seed1.pcap
gen() { # gen N FILE
	[[ -s $2 ]] && return 0
	echo "bench: generating $1 packets into $2 (once; cached)" >&2
	go run ./bench/analyzegen -n "$1" -o "$2.tmp" && mv "$2.tmp" "$2" || die "analyzegen failed"
}
gen 1000000 "$SMALL"
gen "$PACKETS" "$BIG"
HUGE=$CACHE/analyze-v2-50000000-seed1.pcap
if [[ $FLAT == 1 ]]; then gen 50000000 "$HUGE"; fi

WORK=$(mktemp -d /tmp/sonde-bench-analyze.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
RES=$WORK/results.tsv

CORELAT=$WORK/corelat
go build -o "$CORELAT" ./bench/corelat || die "cannot build bench/corelat"

# run NAME FILE PACKETS CMD...: one timed run on core 0, appended to RES.
run() { CORES=0 NPROCS=1 runon "$@"; }
# run2: the same on cores 0 and 1.
run2() {
	"$CORELAT" -n 200000 -runs 3 | awk '{print $4}' >>"$WORK/corelat.txt" || die "corelat failed"
	CORES=0,1 NPROCS=2 runon "$@"
}
# pair NAME FILE PACKETS CMD...: the same run on core 0 and on core 1 at
# once, both appended to RES.
pair() {
	local name=$1 file=$2 n=$3 c pids=() rc=0
	shift 3
	for c in 0 1; do
		/usr/bin/time -f "%e %U %S %M" -o "$WORK/time$c" taskset -c $c env GOMAXPROCS=1 "$@" "$file" >/dev/null 2>"$WORK/err$c" &
		pids+=($!)
	done
	wait "${pids[0]}" || rc=1
	wait "${pids[1]}" || rc=1
	((rc == 0)) || { cat "$WORK/err0" "$WORK/err1" >&2; die "$name failed on $file"; }
	for c in 0 1; do
		read -r wall user sys rss <"$WORK/time$c"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(basename "$file")" "$n" "$wall" "$user" "$sys" "$rss" >>"$RES"
	done
}
runon() {
	local name=$1 file=$2 n=$3
	shift 3
	if ! /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" taskset -c "$CORES" env GOMAXPROCS="$NPROCS" "$@" "$file" >"$WORK/out" 2>"$WORK/err"; then
		cat "$WORK/err" >&2
		die "$name failed on $file"
	fi
	read -r wall user sys rss <"$WORK/time"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(basename "$file")" "$n" "$wall" "$user" "$sys" "$rss" >>"$RES"
}

tsfile=$SMALL tsn=1000000
if [[ $TSHARK_FULL == 1 ]]; then tsfile=$BIG tsn=$PACKETS; fi
for ((i = 0; i < REPEAT; i++)); do
	echo "bench: round $((i + 1)) of $REPEAT" >&2
	# Alternate the order so that no tool always runs first.
	if ((i % 2 == 0)); then
		run sonde "$BIG" "$PACKETS" "$SONDE" analyze --workers 1
		run2 sonde-2w "$BIG" "$PACKETS" "$SONDE" analyze --workers 2
		run tcptrace "$BIG" "$PACKETS" tcptrace -n -l
		run tshark "$tsfile" "$tsn" tshark -q -z conv,tcp -r
		pair sonde-pair "$BIG" "$PACKETS" "$SONDE" analyze --workers 1
	else
		pair sonde-pair "$BIG" "$PACKETS" "$SONDE" analyze --workers 1
		run tshark "$tsfile" "$tsn" tshark -q -z conv,tcp -r
		run tcptrace "$BIG" "$PACKETS" tcptrace -n -l
		run2 sonde-2w "$BIG" "$PACKETS" "$SONDE" analyze --workers 2
		run sonde "$BIG" "$PACKETS" "$SONDE" analyze --workers 1
	fi
	run sonde-1M "$SMALL" 1000000 "$SONDE" analyze --workers 1
done
# Memory bounded by live flows: once each (RSS varies little).
run sonde-mem-1M "$SMALL" 1000000 "$SONDE" analyze --workers 1
run sonde-mem-10M "$BIG" "$PACKETS" "$SONDE" analyze --workers 1
if [[ $FLAT == 1 ]]; then run sonde-mem-50M "$HUGE" 50000000 "$SONDE" analyze --workers 1; fi
run sonde-json-10M "$BIG" "$PACKETS" "$SONDE" analyze --workers 1 --json /dev/null
run sonde-nd-10M "$BIG" "$PACKETS" "$SONDE" analyze --workers 1 --ndjson /dev/null
# The figures of one worker and of two (not the runtime's).
"$SONDE" analyze --workers 1 --json "$WORK/w1.json" "$BIG" >/dev/null || die "sonde --workers 1 --json failed"
"$SONDE" analyze --workers 2 --json "$WORK/w2.json" "$BIG" >/dev/null || die "sonde --workers 2 --json failed"
python3 - "$WORK/w1.json" "$WORK/w2.json" >"$WORK/same" <<'EOF2'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for x in (a, b):
    x.pop("runtime")
    for f in x["files"]:
        f.pop("path")
print("identical" if a == b else "DIFFERENT", f"({len(a.get('tcp', []))} TCP connections, {len(a.get('quic', []))} QUIC flows)")
EOF2
# The last sonde output tells how many packets and flows it saw.
"$SONDE" analyze --workers 1 "$BIG" | tail -1 >"$WORK/summary"

python3 - "$RES" "$WORK/summary" "$WORK/same" "$WORK/corelat.txt" <<'EOF'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1]), delimiter="\t"))
by = {}
for name, f, n, wall, user, sys_, rss in rows:
    d = by.setdefault(name, {"file": f, "n": int(n), "wall": [], "cpu": [], "rss": []})
    d["wall"].append(float(wall)); d["cpu"].append(float(user) + float(sys_)); d["rss"].append(int(rss) / 1024)
med = statistics.median
print(f"\nsonde analyze vs tcptrace vs tshark, one core (sonde-2w: two), medians of {len(by['sonde']['wall'])} runs")
print(f"{'tool':<13} {'file':<32} {'packets':>9} {'wall s':>8} {'cpu s':>8} {'Mpps wall':>10} {'Mpps cpu':>9} {'peak RSS MB':>12}")
fig = {}
for name in [n for n in ["sonde", "sonde-2w", "sonde-pair", "tcptrace", "tshark", "sonde-1M", "sonde-mem-1M", "sonde-mem-10M", "sonde-mem-50M", "sonde-json-10M", "sonde-nd-10M"] if n in by]:
    d = by[name]
    w, c, r = med(d["wall"]), med(d["cpu"]), med(d["rss"])
    fig[name] = (d["n"] / w, d["n"] / c, r)
    print(f"{name:<13} {d['file']:<32} {d['n']:>9} {w:8.2f} {c:8.2f} {d['n']/w/1e6:10.3f} {d['n']/c/1e6:9.3f} {r:12.1f}")
s, tt, ts = fig["sonde"], fig["tcptrace"], fig["tshark"]
print(f"\nratios (packets per second; sonde / peer):")
print(f"  sonde / tcptrace: {s[0]/tt[0]:6.2f}x per wall second, {s[1]/tt[1]:6.2f}x per CPU second   (goal >= 2x)")
print(f"  sonde / tshark:   {s[0]/ts[0]:6.2f}x per wall second, {s[1]/ts[1]:6.2f}x per CPU second   (goal >= 20x)")
print(f"  sonde:            {s[0]/1e6:.3f} Mpps per wall second, {s[1]/1e6:.3f} per CPU second    (goal >= 3 Mpps)")
d = by["sonde-2w"]
w2, c2 = d["n"] / med(d["wall"]), d["n"] / med(d["cpu"])
print(f"  sonde 2 cores:    {w2/1e6:.3f} Mpps per wall second, {w2/s[0]:.2f}x one core's (goal >= 1.8x; "
      f"CPU {c2/1e6:.3f} Mpps per CPU second, {c2/s[1]:.2f}x one core's)")
p = by["sonde-pair"]
ceil = 2 * s[0] / (p["n"] / med(p["wall"]))
rtt = [float(x) for x in open(sys.argv[4]).read().split()]
print(f"  ceiling:          two one-worker runs at once {med(p['wall']):.2f} s wall against {p['n']/s[0]:.2f} s alone: "
      f"two cores give {ceil:.2f}x one core's rate to work split at no cost; two workers reach {w2/s[0]/ceil*100:.0f} % of it")
print("  two workers, each run: " + ", ".join(f"{w:.2f} s ({r:.0f} ns)" for w, r in zip(d["wall"], rtt))
      + "  (wall, and the cores' cache-line round trip just before: bench/corelat)")
print(f"memory: sonde peak RSS {fig['sonde-1M'][2]:.1f} MB on 1 M packets, {s[2]:.1f} MB on {by['sonde']['n']/1e6:.0f} M "
      f"(ratio {s[2]/fig['sonde-1M'][2]:.2f}), 2 workers {med(d['rss']):.1f} MB; tcptrace {tt[2]:.1f} MB")
mem = [(k, med(by[k]["rss"])) for k in ["sonde-mem-1M", "sonde-mem-10M", "sonde-mem-50M"] if k in by]
print("memory, text summary of every connection: " + ", ".join(f"{k[10:]} {r:.1f} MB" for k, r in mem)
      + f" (max/min {max(r for _, r in mem)/min(r for _, r in mem):.2f}; goal <= 100 MB on 10 M, flat within 10 %)")
print(f"memory on 10 M: --json {fig['sonde-json-10M'][2]:.1f} MB, --ndjson (none kept) {fig['sonde-nd-10M'][2]:.1f} MB")
print("figures of 1 and 2 workers on 10 M:", open(sys.argv[3]).read().strip())
print("sonde:", open(sys.argv[2]).read().strip())
EOF
