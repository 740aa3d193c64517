#!/usr/bin/env bash
# sonde monitor beside irtt and Debian's smokeping_prober on one lab path
# (issue 13, "Bars"): the same rate (10 probes/s), one tool at a time on
# the idle `fiber` lab (5.0 ms configured base RTT), rounds alternating the
# order. A report, not a test: it exits 0 whatever the figures, non-zero
# only when a tool fails. Needs root (the lab).
#
# Per tool (medians over the rounds): RTT p50 minus the configured truth,
# p99, CPU % of one core, RSS and its anonymous part (RssAnon: the
# process's own memory, without the pages of its executable and libraries
# that RSS also counts; each the max sampled each second), all over the
# same BENCH_DURATION window of each run, and the ratios sonde/irtt and
# sonde/smokeping_prober. The load average is printed beside: CPU shares
# are honest, not idle, when other work shares the cores.
#   sonde            `sonde monitor run` (STAMP to `sonde serve` in the server
#                    namespace); RTTs from its store
#   irtt             `irtt client` to `irtt server`; RTTs from its JSON output
#   smokeping_prober ICMP echo (--privileged); RTTs from its /metrics
#                    histogram, scraped at the window's start and end, with
#                    50 µs buckets from 0 to 20 ms (interpolated)
# Each tool runs BENCH_DURATION + 6 s; the window starts 3 s in, so start-up
# is left out of CPU and RTT alike.
#
# Environment: BENCH_DURATION (60), BENCH_ROUNDS (2), BENCH_PROFILE
# (fiber), BENCH_TRUTH_MS (5.0, the profile's base RTT), SONDE (a sonde
# binary; default: built from this tree), MONITOR (the binary that runs
# `monitor run`: default SONDE; e.g. the monitor-only build of `make
# monitor-release`, dist/sonde-monitor-VERSION-linux-amd64), IRTT (irtt), SMOKEPING
# (prometheus-smokeping-prober), GO (go).
set -u -o pipefail
cd "$(dirname "$0")/.."
DUR=${BENCH_DURATION:-60}
ROUNDS=${BENCH_ROUNDS:-2}
PROFILE=${BENCH_PROFILE:-fiber}
TRUTH=${BENCH_TRUTH_MS:-5.0}
IRTT=${IRTT:-irtt}
SMOKEPING=${SMOKEPING:-prometheus-smokeping-prober}
GO=${GO:-go}
case "$DUR$ROUNDS" in *[!0-9]*) echo "BENCH_DURATION and BENCH_ROUNDS must be whole numbers" >&2; exit 2 ;; esac
[ "$DUR" -ge 5 ] && [ "$DUR" -le 3600 ] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] ||
	{ echo "BENCH_DURATION must be 5-3600 s and BENCH_ROUNDS 1-20" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench/monitor_peers.sh needs root (the lab)" >&2; exit 1; }
for c in "$IRTT" "$SMOKEPING" sqlite3 curl; do
	command -v "$c" >/dev/null || { echo "$c not found: apt-get install -y irtt prometheus-smokeping-prober sqlite3 curl" >&2; exit 1; }
done

tmp=$(mktemp -d)
state=$tmp/lab
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${SONDE:-}" ] && "$SONDE" lab down --state-dir "$state" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

SONDE=${SONDE:-}
if [ -z "$SONDE" ]; then
	$GO build -o "$tmp/sonde" ./cmd/sonde || exit 1
	SONDE=$tmp/sonde
fi
TCK=$(getconf CLK_TCK)

# --cpu-idle: the lab's CPUs may halt (polling would take the cores from
# the tools measured; every tool sees the same path either way).
"$SONDE" lab up "$PROFILE" --detach --cpu-idle --state-dir "$state" >"$tmp/lab.log" 2>&1 ||
	{ echo "lab up $PROFILE failed: $(cat "$tmp/lab.log")" >&2; exit 1; }
client() { "$SONDE" lab exec --state-dir "$state" client -- "$@"; }
server() { "$SONDE" lab exec --state-dir "$state" server -- "$@"; }
SRV=$(server ip -4 -o addr show | awk '$2 != "lo" { sub(/\/.*/, "", $4); print $4; exit }')
[ -n "$SRV" ] || { echo "no server address in the lab" >&2; exit 1; }

server "$SONDE" serve --addr "$SRV:8080" --db :memory: >"$tmp/serve.log" 2>&1 & pids+=($!)
server "$IRTT" server -b "$SRV:2112" -i 0 -d 0 -l 0 >"$tmp/irtt-server.log" 2>&1 & pids+=($!)
for _ in $(seq 50); do client curl -fs "http://$SRV:8080/healthz" >/dev/null && break; sleep 0.2; done
client curl -fs "http://$SRV:8080/healthz" >/dev/null || { echo "sonde serve did not start: $(cat "$tmp/serve.log")" >&2; exit 1; }
client ping -n -q -c 3 -i 0.2 "$SRV" >/dev/null || { echo "no path to $SRV in the lab" >&2; exit 1; }

buckets=$(python3 -c 'print(",".join("%g" % (i * 5e-5) for i in range(1, 401)))')

# tool_pid PID PATTERN: the tool's own process among PID and its
# descendants (lab exec runs it as a child; `sonde lab exec` itself is a
# sonde too), the one whose command line matches PATTERN.
tool_pid() {
	local p=$1 pat=$2 q c
	for _ in $(seq 100); do
		local todo=("$p")
		while [ "${#todo[@]}" -gt 0 ]; do
			q=${todo[0]} todo=("${todo[@]:1}")
			c=$(tr '\0' ' ' <"/proc/$q/cmdline" 2>/dev/null)
			case $c in *"lab exec"*) ;; *) [[ $c =~ $pat ]] && { echo "$q"; return; } ;; esac
			todo+=($(pgrep -P "$q"))
		done
		sleep 0.05
	done
	echo "no process matching $pat under $p" >&2
	echo "$p"
}
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
anon_kb() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# measure TOOL PID ROUND: samples CPU and RSS over the window, calling
# on_start and on_end hooks at its edges. Writes TOOL-ROUND.use.
measure() {
	local tool=$1 pid=$2 round=$3 c0 c1 t0 t1 r a max=0 amax=0
	sleep 3
	"on_start_$tool" "$round"
	c0=$(cpu_ticks "$pid") t0=$(date +%s.%N)
	for ((i = 0; i < DUR; i++)); do
		sleep 1
		r=$(rss_kb "$pid") a=$(anon_kb "$pid")
		[ -n "$r" ] && [ "$r" -gt "$max" ] && max=$r
		[ -n "$a" ] && [ "$a" -gt "$amax" ] && amax=$a
	done
	c1=$(cpu_ticks "$pid") t1=$(date +%s.%N)
	"on_end_$tool" "$round"
	[ -n "$c0" ] && [ -n "$c1" ] || { echo "$tool exited early" >&2; return 1; }
	python3 -c "import sys; c0,c1,t0,t1,tck,m,a=map(float,sys.argv[1:]); print((c1-c0)/tck/(t1-t0)*100, m/1024, a/1024)" \
		"$c0" "$c1" "$t0" "$t1" "$TCK" "$max" "$amax" >"$tmp/$tool-$round.use"
	cut -d' ' -f1-3 /proc/loadavg >>"$tmp/load"
}

on_start_sonde() { date +%s%N >"$tmp/sonde-$1.from"; }
on_end_sonde() { date +%s%N >"$tmp/sonde-$1.to"; }
run_sonde() {
	local r=$1 db=$tmp/sonde-$1.db
	client "${MONITOR:-$SONDE}" monitor run --target "$SRV:8080" --probe-interval 100ms --store "$db" --listen off --name "peers-$r" 2>"$tmp/sonde-$r.log" &
	local lp=$!
	pids+=("$lp")
	measure sonde "$(tool_pid "$lp" "monitor run")" "$r" || return 1
	kill -TERM "$(tool_pid "$lp" "monitor run")" 2>/dev/null
	wait "$lp"
	# The store's clock is Unix ns, like date's.
	sqlite3 "$db" "SELECT rtt_ns FROM probes WHERE flags = 0 AND sent_ns >= $(cat "$tmp/sonde-$r.from") AND sent_ns < $(cat "$tmp/sonde-$r.to")" >"$tmp/sonde-$r.rtt"
	[ -s "$tmp/sonde-$r.rtt" ] || { echo "sonde stored no RTT: $(tail -3 "$tmp/sonde-$r.log")" >&2; return 1; }
}

on_start_irtt() { date +%s%N >"$tmp/irtt-$1.from"; }
on_end_irtt() { date +%s%N >"$tmp/irtt-$1.to"; }
run_irtt() {
	local r=$1
	client "$IRTT" client -Q -i 100ms -d "$((DUR + 6))s" -l 44 -o "$tmp/irtt-$r.json" "$SRV:2112" >"$tmp/irtt-$r.log" 2>&1 &
	local lp=$!
	pids+=("$lp")
	measure irtt "$(tool_pid "$lp" "irtt client")" "$r" || return 1
	wait "$lp" || { echo "irtt failed: $(cat "$tmp/irtt-$r.log")" >&2; return 1; }
	python3 - "$tmp/irtt-$r.json" "$(cat "$tmp/irtt-$r.from")" "$(cat "$tmp/irtt-$r.to")" >"$tmp/irtt-$r.rtt" <<'EOF'
import gzip, json, sys
path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
op = gzip.open if path.endswith(".gz") else open
try:
    d = json.load(op(path, "rt"))
except OSError:
    d = json.load(gzip.open(path + ".gz", "rt"))
for rt in d["round_trips"]:
    if rt.get("lost") != "false":
        continue
    sent = rt["timestamps"]["client"]["send"]["wall"]
    if lo <= sent < hi:
        print(rt["delay"]["rtt"])
EOF
}

scrape() { client curl -fs "http://127.0.0.1:9374/metrics" | grep '^smokeping_response_duration_seconds_bucket'; }
on_start_smokeping() { scrape >"$tmp/smokeping-$1.m0"; }
on_end_smokeping() { scrape >"$tmp/smokeping-$1.m1"; }
run_smokeping() {
	local r=$1
	client "$SMOKEPING" --privileged -i 100ms --buckets "$buckets" --web.listen-address 127.0.0.1:9374 "$SRV" >"$tmp/smokeping-$r.log" 2>&1 &
	local lp=$!
	pids+=("$lp")
	measure smokeping "$(tool_pid "$lp" "smokeping-prober")" "$r" || return 1
	kill -TERM "$(tool_pid "$lp" "smokeping-prober")" 2>/dev/null
	wait "$lp"
	[ -s "$tmp/smokeping-$r.m1" ] || { echo "smokeping_prober served no histogram: $(tail -3 "$tmp/smokeping-$r.log")" >&2; return 1; }
}

order=(sonde irtt smokeping)
for ((r = 1; r <= ROUNDS; r++)); do
	for t in "${order[@]}"; do
		echo "round $r: $t, ${DUR}s" >&2
		"run_$t" "$r" || exit 1
	done
	order=("${order[2]}" "${order[1]}" "${order[0]}") # alternate: reverse
done

python3 - "$tmp" "$ROUNDS" "$TRUTH" "$DUR" "$PROFILE" "$(nproc)" <<'EOF'
import re, statistics, sys
tmp, rounds, truth, dur, profile, ncpu = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]

def hist(path):
    out = {}
    for line in open(path):
        m = re.search(r'le="([^"]+)"\} (\S+)', line)
        if m:
            le = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
            out[le] = out.get(le, 0) + float(m.group(2))
    return out

def hpct(h, q):  # linear inside the bucket
    les = sorted(h)
    n = h[les[-1]]
    prev_le, prev_c = 0.0, 0.0
    for le in les:
        if h[le] >= q * n:
            if le == float("inf"):
                return prev_le
            f = (q * n - prev_c) / max(h[le] - prev_c, 1e-9)
            return prev_le + f * (le - prev_le)
        prev_le, prev_c = le, h[le]
    return prev_le

rows = {}
for tool in ("sonde", "irtt", "smokeping"):
    p50s, p99s, cpus, rsss, anons, ns = [], [], [], [], [], []
    for r in range(1, rounds + 1):
        if tool == "smokeping":
            h0, h1 = hist(f"{tmp}/smokeping-{r}.m0"), hist(f"{tmp}/smokeping-{r}.m1")
            h = {le: h1[le] - h0.get(le, 0) for le in h1}
            p50, p99, n = hpct(h, 0.5) * 1e3, hpct(h, 0.99) * 1e3, h[max(h)]
        else:
            xs = [int(x) / 1e6 for x in open(f"{tmp}/{tool}-{r}.rtt").read().split()]
            p50, p99, n = pct(xs, 0.5), pct(xs, 0.99), len(xs)
        cpu, rss, anon = map(float, open(f"{tmp}/{tool}-{r}.use").read().split())
        p50s.append(p50); p99s.append(p99); cpus.append(cpu); rsss.append(rss); anons.append(anon); ns.append(n)
    rows[tool] = dict(p50=statistics.median(p50s), p99=statistics.median(p99s),
                      cpu=statistics.median(cpus), rss=statistics.median(rsss), anon=statistics.median(anons),
                      n=statistics.median(ns), cpus=cpus, rsss=rsss, p50s=p50s)

print(f"sonde monitor vs irtt vs smokeping_prober: lab {profile}, truth (configured base RTT) {truth:.3f} ms, "
      f"10 probes/s, {dur} s per run, {rounds} round(s), medians over rounds")
loads = [l.split() for l in open(f"{tmp}/load")]
print(f"load average (1 min) at the end of each run: {' '.join(l[0] for l in loads)} on {ncpu} cores")
print(f"{'tool':<18}{'RTTs':>7}{'p50-truth ms':>14}{'p99 ms':>9}{'CPU % core':>12}{'RSS MB':>9}{'anon MB':>9}   per round: CPU %, RSS MB")
names = {"sonde": "sonde monitor", "irtt": "irtt client", "smokeping": "smokeping_prober"}
for tool, v in rows.items():
    per = "  ".join(f"{c:.3f}/{m:.1f}" for c, m in zip(v["cpus"], v["rsss"]))
    print(f"{names[tool]:<18}{v['n']:>7.0f}{v['p50'] - truth:>+14.3f}{v['p99']:>9.3f}{v['cpu']:>12.3f}{v['rss']:>9.1f}{v['anon']:>9.1f}   {per}")
s = rows["sonde"]
for peer in ("irtt", "smokeping"):
    p = rows[peer]
    ratio = lambda a, b: a / b if b > 0 else float("nan")
    print(f"sonde/{names[peer]}: CPU {ratio(s['cpu'], p['cpu']):.2f}, RSS {ratio(s['rss'], p['rss']):.2f}, anon {ratio(s['anon'], p['anon']):.2f}, "
          f"p50 difference {s['p50'] - p['p50']:+.3f} ms, p99 difference {s['p99'] - p['p99']:+.3f} ms")
print("smokeping_prober's percentiles come from its histogram (50 µs buckets, interpolated); ICMP, not UDP.")
EOF
