#!/usr/bin/env bash
# Soak benchmark of the `sonde monitor run` daemon (issue 13, "Bars"): its
# CPU and memory over a long run against loopback sonde servers. A report,
# not a test: it exits 0 whatever the figures, non-zero only when a tool
# fails.
#
# Rows:
#   A  8 targets × 10 probes/s (8 `sonde serve` on 127.0.0.1)
#   B  1 target × 100 probes/s
# Each runs BENCH_SECONDS; every BENCH_SAMPLE s the daemon's CPU time
# (utime+stime of /proc/PID/stat, all threads) and RSS (VmRSS) are read.
# Printed per row: the RSS series (every sample, then at the first minute,
# every 5 minutes and the last minute, each split into anonymous memory
# and file pages: the executable's own pages, nearly all of it, 11.3 MB
# of the amd64 monitor build), the Go runtime's memory from the daemon's /metrics at the end
# (heap in use, total from the OS, next GC goal), the CPU % of one core
# over the soak (from the first sample on, so start-up is left out),
# RSS first/last/max and its growth from the first minute to the last,
# context switches per probe (all threads, /proc/PID/task/*/status), the
# send-schedule lateness p50/p99/max of every probe stored, and the store's
# bytes per probe row (the probes table and its index from sqlite's dbstat,
# and the whole database file; for a journal, the monitor build's store,
# its raw segments, read by bench/storestat). Bars: < 2 % of one core, < 64 MB RSS,
# flat; lateness p99 < 1 ms on an idle machine; < 50 bytes per probe row.
# The machine's load average is printed beside: lateness is honest, not
# idle, when other work shares the cores.
#
# With BENCH_PEERS=1 (the default when irtt and smokeping_prober are
# installed and the script runs as root), row A runs the peers beside the
# daemon over the same span, sampled at the same instants: Debian's
# smokeping_prober (ICMP echo, --privileged) to 127.0.0.1–127.0.0.8 at
# 10/s each (the daemon's plan: 8 targets × 10/s in one process), and one
# irtt client at 80/s to an irtt server on 127.0.0.1 (irtt probes one
# server per process: the same probes per second in one process). Printed
# beside the daemon's: their RSS (anonymous + file) at the same marks and
# their CPU % of one core.
#
# Environment: BENCH_SECONDS (1800), BENCH_SAMPLE (10), BENCH_ROWS (AB),
# BENCH_PEERS (see above), SONDE (a sonde binary; default: built from this
# tree), MONITOR (the binary that runs `monitor run`, e.g. the monitor-only
# build from `make monitor-release`; default SONDE: the servers need the
# full build), IRTT (irtt), SMOKEPING (prometheus-smokeping-prober), GO (go).
set -u -o pipefail
cd "$(dirname "$0")/.."
SECS=${BENCH_SECONDS:-1800}
SAMPLE=${BENCH_SAMPLE:-10}
ROWS=${BENCH_ROWS:-AB}
GO=${GO:-go}
IRTT=${IRTT:-irtt}
SMOKEPING=${SMOKEPING:-prometheus-smokeping-prober}
if [ -z "${BENCH_PEERS:-}" ]; then
	BENCH_PEERS=0
	command -v "$IRTT" >/dev/null && command -v "$SMOKEPING" >/dev/null && [ "$(id -u)" = 0 ] && BENCH_PEERS=1
fi
case "$SECS$SAMPLE" in *[!0-9]*) echo "BENCH_SECONDS and BENCH_SAMPLE must be whole seconds" >&2; exit 2 ;; esac
[ "$SECS" -ge $((2 * SAMPLE)) ] && [ "$SAMPLE" -ge 1 ] || { echo "BENCH_SECONDS must be at least 2 × BENCH_SAMPLE" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

SONDE=${SONDE:-}
MONITOR=${MONITOR:-}
if [ -n "$MONITOR" ]; then echo "monitor run: $MONITOR ($(stat -c %s "$MONITOR") bytes)"; fi
if [ -z "$SONDE" ]; then
	$GO build -o "$tmp/sonde" ./cmd/sonde || exit 1
	SONDE=$tmp/sonde
fi
# The monitor build has no SQLite: its store is a journal, read back by
# bench/storestat; a SQLite store is read by sqlite3.
STORE_KIND=sqlite
kind=$("${MONITOR:-$SONDE}" monitor report --store "$tmp/kind.db" 2>&1)
if [[ $kind == *"has no SQLite"* ]]; then
	STORE_KIND=journal
	$GO build -o "$tmp/storestat" ./bench/storestat || exit 1
else
	command -v sqlite3 >/dev/null || { echo "bench/monitor_soak.sh needs sqlite3: apt-get install -y sqlite3" >&2; exit 1; }
fi
TCK=$(getconf CLK_TCK)

# Free loopback ports (the kernel picks them) for the servers and /metrics.
ports=$(python3 -c '
import socket
ss=[socket.socket() for _ in range(12)]
for s in ss: s.bind(("127.0.0.1",0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
read -r -a port <<<"$ports"

targets=()
for i in 0 1 2 3 4 5 6 7; do
	"$SONDE" serve --addr "127.0.0.1:${port[$i]}" --db :memory: >"$tmp/serve$i.log" 2>&1 & pids+=($!)
	targets+=("127.0.0.1:${port[$i]}")
done
for t in "${targets[@]}"; do
	for _ in $(seq 50); do curl -fs "http://$t/healthz" >/dev/null && break; sleep 0.2; done
	curl -fs "http://$t/healthz" >/dev/null || { echo "server $t did not start: $(cat "$tmp"/serve*.log)" >&2; exit 1; }
done

cpu_ticks() { # utime+stime of the whole process
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# rss_split PID: "anon file" kB (RssAnon, RssFile + RssShmem).
rss_split() { awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f += $2 } /^RssShmem:/ { f += $2 } END { print a + 0, f + 0 }' "/proc/$1/status"; }
ctxsw() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'; }

# run ROW RATE TARGET… : one soak; prints its figures.
run() {
	local row=$1 rate=$2
	shift 2
	local db=$tmp/$row.db args=()
	[ "$STORE_KIND" = journal ] && db=journal:$tmp/$row.journal
	for t in "$@"; do args+=(--target "$t"); done
	"${MONITOR:-$SONDE}" monitor run "${args[@]}" --probe-interval "$((1000 / rate))ms" --store "$db" --listen "127.0.0.1:${port[8]}" \
		--name "soak-$row" 2>"$tmp/$row.log" & local pid=$!
	pids+=("$pid")
	# The peers (row A, BENCH_PEERS=1): started with the daemon, measured
	# over the same span at the same instants.
	local peers=() peerpids=() pc0=() pc=() pmarks=()
	if [ "$row" = A ] && [ "$BENCH_PEERS" = 1 ]; then
		"$IRTT" server -b "127.0.0.1:${port[9]}" -i 0 -d 0 -l 0 >"$tmp/irtt-server.log" 2>&1 & pids+=($!)
		# The client's first packet is refused if the server is not
		# listening yet (seen on a loaded machine): wait up to 5 s.
		for _ in $(seq 50); do grep -q "listener on" "$tmp/irtt-server.log" && break; sleep 0.1; done
		"$IRTT" client -Q -i 12500us -d "$((SECS + 60))s" -l 44 "127.0.0.1:${port[9]}" >"$tmp/irtt.log" 2>&1 &
		peers+=(irtt) peerpids+=($!) pids+=($!)
		"$SMOKEPING" --privileged -i 100ms --web.listen-address "127.0.0.1:${port[10]}" \
			127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7 127.0.0.8 >"$tmp/smokeping.log" 2>&1 &
		peers+=(smokeping_prober) peerpids+=($!) pids+=($!)
	fi
	local t0 now c0 s0 c s rss series="" marks="" maxrss=0 first=() last=() split
	t0=$(date +%s.%N)
	sleep 1
	kill -0 "$pid" 2>/dev/null || { echo "row $row: sonde monitor run exited: $(cat "$tmp/$row.log")" >&2; return 1; }
	sleep "$((SAMPLE - 1))"
	# The first sample is the baseline: start-up (store migration, session
	# set-up) is outside the soak's figures.
	c0=$(cpu_ticks "$pid") s0=$(ctxsw "$pid")
	local k
	for k in "${!peerpids[@]}"; do
		kill -0 "${peerpids[$k]}" 2>/dev/null || { echo "row $row: ${peers[$k]} exited: $(tail -3 "$tmp/${peers[$k]%%_*}.log")" >&2; return 1; }
		pc0[$k]=$(cpu_ticks "${peerpids[$k]}")
	done
	local tc0
	tc0=$(date +%s.%N)
	local i n=$((SECS / SAMPLE - 1))
	for ((i = 1; i <= n; i++)); do
		sleep "$SAMPLE"
		kill -0 "$pid" 2>/dev/null || { echo "row $row: daemon died: $(tail -3 "$tmp/$row.log")" >&2; return 1; }
		rss=$(rss_kb "$pid")
		series="$series $((rss / 1024))"
		# t (s since the start), RSS, anon, file, in kB: the marks.
		split=$(rss_split "$pid")
		marks="$marks $(((i + 1) * SAMPLE)):$rss:${split// /:}"
		[ "$rss" -gt "$maxrss" ] && maxrss=$rss
		for k in "${!peerpids[@]}"; do
			split=$(rss_split "${peerpids[$k]}" 2>/dev/null) || split="0 0"
			pmarks[$k]="${pmarks[$k]:-} $(((i + 1) * SAMPLE)):${split// /:}"
		done
		[ "$i" -le 6 ] && first+=("$rss")
		last+=("$rss")
		[ "${#last[@]}" -gt 6 ] && last=("${last[@]:1}")
	done
	c=$(cpu_ticks "$pid") s=$(ctxsw "$pid")
	for k in "${!peerpids[@]}"; do pc[$k]=$(cpu_ticks "${peerpids[$k]}"); done
	now=$(date +%s.%N)
	local peerarg=""
	for k in "${!peerpids[@]}"; do
		[ -n "${pc[$k]}" ] || { echo "row $row: ${peers[$k]} exited before the end: $(tail -3 "$tmp/${peers[$k]%%_*}.log")" >&2; return 1; }
		peerarg="$peerarg ${peers[$k]}=${pc0[$k]}=${pc[$k]}=${pmarks[$k]// /,}"
		kill "${peerpids[$k]}" 2>/dev/null
	done
	local gomem
	gomem=$(curl -fs "http://127.0.0.1:${port[8]}/metrics" | awk '/^go_memstats_heap_inuse_bytes /{h=$2} /^go_memstats_sys_bytes /{s=$2} /^go_memstats_next_gc_bytes /{g=$2} END{printf "heap in use %.1f MB, from the OS %.1f MB, next GC at %.1f MB", h/1048576, s/1048576, g/1048576}')
	local load
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null
	local probes lat tblbytes filebytes rollups=0 longbytes=0
	if [ "$STORE_KIND" = journal ]; then
		local jstat
		jstat=$("$tmp/storestat" "$db") || return 1
		read -r probes rollups lat <<<"$jstat"
		# The raw segments (probes and counters), the long-lived ones
		# (rollups, events, restarts), and the whole journal.
		tblbytes=$(cat "$tmp/$row.journal"/raw-*.seg | wc -c)
		longbytes=$(cat "$tmp/$row.journal"/long-*.seg | wc -c)
		filebytes=$(cat "$tmp/$row.journal"/* | wc -c)
	else
		probes=$(sqlite3 "$db" 'SELECT count(*) FROM probes')
		lat=$(sqlite3 "$db" "WITH l AS (SELECT lateness_ns v, row_number() OVER (ORDER BY lateness_ns) r, count(*) OVER () n FROM probes WHERE flags & 2 = 0)
			SELECT printf('%.1f %.1f %.1f', max(CASE WHEN r <= (n+1)/2 THEN v END)/1e3, max(CASE WHEN r <= (n*99+99)/100 THEN v END)/1e3, max(v)/1e3) FROM l")
		tblbytes=$(sqlite3 "$db" "SELECT sum(pgsize) FROM dbstat WHERE name = 'probes' OR name LIKE 'sqlite_autoindex_probes%'" 2>/dev/null)
		filebytes=$(($(stat -c %s "$db") + $(stat -c %s "$db-wal" 2>/dev/null || echo 0)))
	fi
	python3 - "$row" "$rate" "$#" "$c0" "$c" "$tc0" "$now" "$t0" "$TCK" "$s0" "$s" "$probes" "$maxrss" "${tblbytes:-0}" "$filebytes" "$lat" "$load" "${first[*]}" "${last[*]}" "$series" "$SECS" "$marks" "$gomem" "$peerarg" "$STORE_KIND" "$rollups" "$longbytes" <<'EOF'
import sys
(row, rate, ntg, c0, c, tc0, now, t0, tck, s0, s, probes, maxrss, tbl, fileb, lat, load, first, last, series, secs, marks, gomem, peerarg, kind, rollups, longb) = sys.argv[1:]
tck = float(tck); el = float(now) - float(tc0)
cpu = (float(c) - float(c0)) / tck / el * 100
sent = float(ntg) * float(rate) * el
first = [int(x) for x in first.split()]; last = [int(x) for x in last.split()]
p50, p99, pmax = lat.split() if lat else ("nan",) * 3
probes = int(probes)
print(f"row {row}: {ntg} target(s) x {rate}/s for {secs} s (figures over the last {el:.0f} s; load average at the end {load})")
print(f"  RSS series (MB, every sample):{series}")
ms = [tuple(int(x) for x in m.split(":")) for m in marks.split()]
def at(t):  # the sample nearest t seconds in
    return min(ms, key=lambda m: abs(m[0] - t))
pick = [at(60)] + [at(t) for t in range(300, int(secs), 300)] + [ms[-1]]
seen = set()
print("  RSS (MB) at: " + ", ".join(f"{m[0]/60:.0f} min {m[1]/1024:.1f} (anon {m[2]/1024:.1f}, file {m[3]/1024:.1f})" for m in pick if not (m[0] in seen or seen.add(m[0]))))
big = max(ms, key=lambda m: m[1])
print(f"  RSS max {big[1]/1024:.1f} MB at {big[0]/60:.1f} min (anon {big[2]/1024:.1f}, file {big[3]/1024:.1f}); Go runtime at the end: {gomem or 'no /metrics'}")
print(f"  CPU: {cpu:.2f} % of one core (bar < 2 %)  [{(float(c)-float(c0))/tck:.2f} s CPU in {el:.0f} s]")
print(f"  RSS: max {int(maxrss)/1024:.1f} MB (bar < 64 MB); first minute mean {sum(first)/len(first)/1024:.1f} MB, last minute mean {sum(last)/len(last)/1024:.1f} MB, growth {(sum(last)/len(last)-sum(first)/len(first))/1024:+.1f} MB")
print(f"  context switches: {(float(s)-float(s0))/sent:.2f} per probe ({int(float(s)-float(s0))} for ~{sent:.0f} probes)")
print(f"  lateness of the {probes} probes stored: p50 {p50} µs, p99 {p99} µs (bar < 1000 µs idle), max {pmax} µs")
for p in peerarg.split():
    name, pc0, pc1, pm = p.split("=")
    pms = [tuple(int(x) for x in m.split(":")) for m in pm.split(",") if m]
    def pat(t):
        return min(pms, key=lambda m: abs(m[0] - t))
    ppick = [pat(60)] + [pat(t) for t in range(300, int(secs), 300)] + [pms[-1]]
    pseen = set()
    pcpu = (float(pc1) - float(pc0)) / tck / el * 100
    pbig = max(pms, key=lambda m: m[1] + m[2])
    print(f"  beside it, {name}: CPU {pcpu:.2f} % of one core; RSS (MB) at: " + ", ".join(f"{m[0]/60:.0f} min {(m[1]+m[2])/1024:.1f} (anon {m[1]/1024:.1f}, file {m[2]/1024:.1f})" for m in ppick if not (m[0] in pseen or pseen.add(m[0]))) + f"; max {(pbig[1]+pbig[2])/1024:.1f}")
if probes and kind == "journal":
    print(f"  store (journal): {int(tbl)/probes:.1f} bytes per probe row (raw segments, counters included; bar < 50), {int(fileb)/probes:.1f} bytes per probe row for the whole journal ({int(fileb)} bytes)")
    if int(rollups):
        print(f"  store (journal): {int(longb)/int(rollups):.0f} bytes per rollup ({rollups} stream-minutes; long segments, events and restarts included)")
elif probes:
    print(f"  store: {int(tbl)/probes:.1f} bytes per probe row (probes table + key, dbstat; bar < 50), {int(fileb)/probes:.1f} bytes per probe row for the whole file ({int(fileb)} bytes)")
EOF
}

echo "sonde monitor soak: BENCH_SECONDS=$SECS, sample every ${SAMPLE}s, $(nproc) cores" >&2
case $ROWS in *A*) run A 10 "${targets[@]}" || exit 1 ;; esac
case $ROWS in *B*) run B 100 "${targets[0]}" || exit 1 ;; esac
exit 0
