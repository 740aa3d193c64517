#!/usr/bin/env bash
# Browser benchmark: the page's download and upload goodput in headless
# Chromium against the native client (`sonde test`), both against one
# `sonde serve` in the same invocation. A report, not a test: it exits 0
# whatever the ratios, non-zero only when a tool fails to run.
#
# Paths:
#   loopback   server on 127.0.0.1; bounded by CPU (on a 2-core machine the
#              browser's per-byte cost, not the network, sets its figure).
#   lan-20ms   when root: `sonde lab up lan-20ms` (1 Gbit/s, 20 ms RTT), the
#              server in the lab's server namespace, native client and
#              Chromium in its client namespace. BENCH_LAB=0 skips it.
#
# Each path runs BENCH_REPEAT times per tool, native and page alternating
# (the first of the pair alternates too); the table shows medians of the
# whole-phase goodput (receiver counts: the page's for download, the
# server's for upload) and page/native ratios. Goals (issue #6): loopback
# download >= 0.8x and upload >= 0.6x native; lan-20ms >= 900 Mbit/s both
# ways.
#
# The browser's own ceiling runs beside them (BENCH_BARE=0 skips it):
# bench/browserceiling's bare page moves bytes over 4 WebSockets (256 KiB
# messages), or over fetch (1 streamed response read with a BYOB reader
# down; 4 workers posting 16 MiB Blobs up), and does nothing else. Its
# figure is what Chromium itself reaches here, so page/bare says how much
# the page's measuring costs. Bare runs also print the machine's idle CPU
# (/proc/stat) while their streams ran, download / upload: near 0 % means
# the browser's figure is bound by CPU, not by the path.
#
# The page runs without DevTools watching its network (bench/browser_page.mjs
# says why) and starts itself (?autostart=1).
#
# Environment: BENCH_REPEAT (3), BENCH_DURATION (8 s per phase, whole
# seconds >= 2), BENCH_LAB (1), BENCH_LOOPBACK (1), BENCH_BARE (1), SONDE (bin/sonde), CHROMIUM (/usr/bin/chromium).
set -u -o pipefail

cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
REPEAT=${BENCH_REPEAT:-3}
DUR=${BENCH_DURATION:-8}
LAB=${BENCH_LAB:-1}
LOOPBACK=${BENCH_LOOPBACK:-1}
BARE=${BENCH_BARE:-1}
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer, got '$REPEAT'"
[[ $DUR =~ ^[0-9]+$ ]] && ((DUR >= 2 && DUR <= 60)) || die "BENCH_DURATION must be whole seconds 2-60, got '$DUR'"
[[ $BARE == 0 || $BARE == 1 ]] || die "BENCH_BARE must be 0 or 1, got '$BARE'"
[[ -x $SONDE ]] || die "$SONDE not found: run 'make build' (or 'make bench')"
[[ -x $CHROMIUM ]] || die "$CHROMIUM not found (make apt-deps installs Debian's chromium)"
command -v node >/dev/null || die "node not installed"
command -v python3 >/dev/null || die "python3 not installed"
command -v ss >/dev/null || die "ss not installed (iproute2)"
SONDE=$(realpath "$SONDE")
if [[ $BARE == 1 ]]; then
	command -v go >/dev/null || die "go not installed (needed for bench/browserceiling; BENCH_BARE=0 skips it)"
fi

WORK=$(mktemp -d /tmp/sonde-bench-browser.XXXXXX)
LAB_ID=""
cleanup() {
	local left i
	left=$(jobs -p)
	[[ -n $left ]] && kill $left 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		[[ -z $(jobs -pr) ]] && break
		sleep 0.1
	done
	left=$(jobs -pr)
	[[ -n $left ]] && kill -KILL $left 2>/dev/null
	wait 2>/dev/null
	[[ -n $LAB_ID ]] && "$SONDE" lab down --id "$LAB_ID" >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
if [[ $BARE == 1 ]]; then
	go build -o "$WORK/browserceiling" ./bench/browserceiling || die "cannot build bench/browserceiling"
fi
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_listen NETNS_PREFIX PORT PID: wait up to 5 s for PID to listen on PORT.
wait_listen() {
	local i
	for ((i = 0; i < 50; i++)); do
		kill -0 "$3" 2>/dev/null || return 1
		[[ -n $($1 ss -Hltn "sport = :$2") ]] && return 0
		sleep 0.1
	done
	return 1
}

# goodput FILE JSONPATH-PREFIX: prints "download upload" in Mbit/s.
goodput() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if sys.argv[2]:
    r = r[sys.argv[2]]
def g(k):
    d = r.get(k) or {}
    return d.get("goodput_bps", 0) / 1e6
errs = r.get("errors") or []
if errs:
    print("errors: " + "; ".join(errs), file=sys.stderr)
print(f"{g('download'):.1f} {g('upload'):.1f}")
EOF
}

# bare_run RUNIN HOSTPORT MODE STREAMS: the bare page's goodput (Mbit/s)
# and the machine's idle CPU (%) while it ran.
bare_run() {
	local out=$WORK/bare.json
	$1 node --no-warnings --experimental-websocket bench/browser_page.mjs \
		"http://$2/?mode=$3&streams=$4&duration=$DUR" "$out" $((DUR + 60)) \
		>"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; die "bare page ($3) failed"; }
	python3 - "$out" <<'EOF' || die "bare page ($3) failed"
import json, sys
r = json.load(open(sys.argv[1]))
if r["errors"]:
    sys.exit("bare page: " + "; ".join(r["errors"]))
print("%.1f %.0f" % (r["bps"] / 1e6, r["idle_pct"]))
EOF
}

# show_row N RUN: print the Nth row from the end as a run's line.
show_row() {
	tail -"$1" "$WORK/rows" | head -1 | awk -v i="$2" '{printf "  %-9s %-10s run %d: download %8.1f  upload %8.1f Mbit/s%s\n", $1, $2, i, $3, $4, (NF > 4 ? sprintf("  idle CPU %d %% / %d %%", $5, $6) : "")}'
}

# run_path NAME HOST PORT RUNIN BARE_HOSTPORT: RUNIN prefixes client
# commands (netns); BARE_HOSTPORT is the browserceiling server, or empty.
run_path() {
	local name=$1 host=$2 port=$3 runin=$4 bare=$5 i order tool out wd wu fd fu
	for ((i = 0; i < REPEAT; i++)); do
		if ((i % 2 == 0)); then order="native page"; else order="page native"; fi
		[[ -n $bare ]] && order="$order bare"
		for tool in $order; do
			out=$WORK/$name-$tool-$i.json
			if [[ $tool == native ]]; then
				$runin "$SONDE" test "$host:$port" -t "${DUR}s" --no-progress --no-udp-probes -q --json "$out" \
					>"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; die "$name: sonde test failed"; }
				echo "$name native $(goodput "$out" "")" >>"$WORK/rows"
			elif [[ $tool == page ]]; then
				$runin node --no-warnings --experimental-websocket bench/browser_page.mjs \
					"http://$host:$port/?duration=$DUR&autostart=1&rtc_duration=1&bidir=0" "$out" $((4 * DUR + 60)) \
					>"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; die "$name: the page run failed"; }
				echo "$name page $(goodput "$out" result)" >>"$WORK/rows"
			else
				# Rows: download, upload (Mbit/s), then idle CPU % of each.
				wd=($(bare_run "$runin" "$bare" ws-down 4)) && wu=($(bare_run "$runin" "$bare" ws-up 4)) || exit 2
				echo "$name bare-ws ${wd[0]} ${wu[0]} ${wd[1]} ${wu[1]}" >>"$WORK/rows"
				show_row 1 "$i"
				fd=($(bare_run "$runin" "$bare" fetch-down 1)) && fu=($(bare_run "$runin" "$bare" fetch-up 4)) || exit 2
				echo "$name bare-fetch ${fd[0]} ${fu[0]} ${fd[1]} ${fu[1]}" >>"$WORK/rows"
			fi
			show_row 1 "$i"
		done
	done
}

# start_bare RUNIN ADDR: start bench/browserceiling; sets BPID and BARE_AT.
start_bare() {
	BARE_AT=""
	[[ $BARE == 1 ]] || return 0
	$1 "$WORK/browserceiling" -addr "$2" >"$WORK/bare.log" 2>&1 &
	BPID=$!
	local i
	for ((i = 0; i < 50; i++)); do
		BARE_AT=$(awk '/^listening /{print $2; exit}' "$WORK/bare.log")
		[[ -n $BARE_AT ]] && return 0
		kill -0 "$BPID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/bare.log" >&2
	die "bench/browserceiling did not start"
}

stop_bare() {
	[[ -n $BARE_AT ]] || return 0
	kill "$BPID" 2>/dev/null
	wait "$BPID" 2>/dev/null
	BARE_AT=""
}

: >"$WORK/rows"
echo "browser vs native goodput, ${DUR} s per phase, ${REPEAT} runs each ($("$CHROMIUM" --version 2>/dev/null))"

# Loopback.
if [[ $LOOPBACK == 0 ]]; then
	echo "loopback: skipped (BENCH_LOOPBACK=0)"
else
	PORT=$(free_port)
	"$SONDE" serve --addr "127.0.0.1:$PORT" --udp-addr off --per-ip-rate off --db :memory: >"$WORK/serve.log" 2>&1 &
	SPID=$!
	wait_listen "" "$PORT" "$SPID" || { cat "$WORK/serve.log" >&2; die "loopback server did not start"; }
	start_bare "" 127.0.0.1:0
	run_path loopback 127.0.0.1 "$PORT" "" "$BARE_AT"
	stop_bare
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
fi

# lan-20ms lab.
if [[ $LAB == 0 ]]; then
	echo "lan-20ms: skipped (BENCH_LAB=0)"
elif [[ $(id -u) != 0 ]]; then
	echo "lan-20ms: skipped (building the lab needs root)"
else
	"$SONDE" lab up lan-20ms --detach >"$WORK/lab.log" 2>&1 || { cat "$WORK/lab.log" >&2; die "sonde lab up lan-20ms failed"; }
	LAB_ID=$(awk '/^lab [0-9a-f]+ /{print $2; exit}' "$WORK/lab.log")
	[[ -n $LAB_ID ]] || { cat "$WORK/lab.log" >&2; die "no lab id in sonde lab up's output"; }
	SRV_IP=$(awk '$1 == "server" {print $2; exit}' "$WORK/lab.log")
	SRV_NS=$(awk '$1 == "server" {print $4; exit}' "$WORK/lab.log")
	CLI_NS=$(awk '$1 == "client" {print $4; exit}' "$WORK/lab.log")
	[[ -n $SRV_IP && -n $SRV_NS && -n $CLI_NS ]] || { cat "$WORK/lab.log" >&2; die "cannot read the lab's addresses"; }
	ip netns exec "$SRV_NS" "$SONDE" serve --addr "$SRV_IP:8080" --udp-addr off --per-ip-rate off --db :memory: >"$WORK/lserve.log" 2>&1 &
	SPID=$!
	wait_listen "ip netns exec $SRV_NS" 8080 "$SPID" || { cat "$WORK/lserve.log" >&2; die "lab server did not start"; }
	start_bare "ip netns exec $SRV_NS" "$SRV_IP:8090"
	run_path lan-20ms "$SRV_IP" 8080 "ip netns exec $CLI_NS" "$BARE_AT"
	stop_bare
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
fi

python3 - "$WORK/rows" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    path, tool, *v = line.split()
    rows.setdefault(path, {}).setdefault(tool, []).append([float(x) for x in v])
def med(t, tool, i):
    xs = [x[i] for x in t.get(tool, [])]
    return statistics.median(xs) if xs else float("nan")
print()
print(f"{'path':<10} {'dir':<9} {'native':>9} {'page':>9} {'bare-ws':>9} {'bare-fetch':>10} {'page/native':>11} {'page/bare':>9}  goal")
for path, t in rows.items():
    for i, d in enumerate(("download", "upload")):
        n, p, bw, bf = (med(t, k, i) for k in ("native", "page", "bare-ws", "bare-fetch"))
        ratio = p / n if n else float("nan")
        bare = max(bw, bf)
        if path == "loopback":
            want = 0.8 if d == "download" else 0.6
            goal = f">= {want}x native: {'met' if ratio >= want else 'NOT met'}"
        else:
            goal = f"page >= 900 Mbit/s: {'met' if p >= 900 else 'NOT met'}"
        print(f"{path:<10} {d:<9} {n:>9.1f} {p:>9.1f} {bw:>9.1f} {bf:>10.1f} {ratio:>11.2f} {p / bare:>9.2f}  {goal}")
print("(Mbit/s, medians; page/bare: the page against the better bare transport; nan: not run)")
print("idle CPU while the bare streams ran (download / upload), median %: " + ", ".join(
    f"{path} {tool} {med(t, tool, 2):.0f} / {med(t, tool, 3):.0f}" for path, t in rows.items() for tool in t if tool.startswith("bare")))
EOF
