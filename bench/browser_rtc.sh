#!/usr/bin/env bash
# WebRTC data-channel benchmark of the browser page (docs/browser.md): the
# page's quality test in headless Chromium against `sonde serve`, on
# loopback and through an emulated path with 5 % random loss each way. A
# report, not a test: it exits 0 whatever the figures, non-zero only when a
# tool fails to run.
#
# Paths:
#   loopback  server and Chromium in one loopback-only network namespace.
#   loss5     `sonde lab up` of a scenario with loss=0.05 both ways
#             (1 Gbit/s, 2 × 1 ms, 1000-packet queue): server in the lab's
#             server namespace, Chromium in its client namespace.
#
# Each path runs BENCH_REPEAT times; the table shows medians of the data
# channel's goodput and messages/s per direction, and its measured loss
# beside the configured one. There is no peer tool that runs a data channel
# from a browser, so the reference is issue #6's (seed 000): a 300
# messages/s ceiling, 60 Mbit/s at most, a browser crash on any loss. Goals:
# >= 60 Mbit/s, and still reporting (per direction) through 5 % loss.
#
# Environment: BENCH_REPEAT (3), BENCH_DURATION (5 s per direction),
# BENCH_SIZE (message bytes, 16-1150; default the page's), BENCH_LOSS (1;
# 0 skips the loss5 path), SONDE (bin/sonde), CHROMIUM (/usr/bin/chromium).
set -u -o pipefail

cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
REPEAT=${BENCH_REPEAT:-3}
DUR=${BENCH_DURATION:-5}
SIZE=${BENCH_SIZE:-}
LOSS=${BENCH_LOSS:-1}
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export PLAYWRIGHT_CORE=$PWD/web/node_modules/playwright-core/index.mjs

[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer, got '$REPEAT'"
[[ $DUR =~ ^[0-9]+$ ]] && ((DUR >= 1 && DUR <= 30)) || die "BENCH_DURATION must be whole seconds 1-30, got '$DUR'"
[[ -z $SIZE || ($SIZE =~ ^[0-9]+$ && $SIZE -ge 16 && $SIZE -le 1150) ]] || die "BENCH_SIZE must be 16-1150 bytes, got '$SIZE'"
[[ $LOSS == 0 || $LOSS == 1 ]] || die "BENCH_LOSS must be 0 or 1, got '$LOSS'"
[[ $(id -u) == 0 ]] || die "needs root (network namespaces)"
[[ -x $SONDE ]] || die "$SONDE not found: run 'make build'"
[[ -x $CHROMIUM ]] || die "$CHROMIUM not found (make apt-deps installs Debian's chromium)"
[[ -f $PLAYWRIGHT_CORE ]] || die "playwright-core not installed (cd web && npm ci)"
command -v node >/dev/null || die "node not installed"
command -v python3 >/dev/null || die "python3 not installed"
SONDE=$(realpath "$SONDE")

WORK=$(mktemp -d /tmp/sonde-bench-rtc.XXXXXX)
NS=sondertcb$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
LAB_ID=""
SPID=""
cleanup() {
	[[ -n $SPID ]] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
	[[ -n $LAB_ID ]] && "$SONDE" lab down --id "$LAB_ID" >/dev/null 2>&1
	ip netns delete "$NS" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# serve RUNIN ADDR: start `sonde serve` and wait for it to listen.
serve() {
	local i
	$1 "$SONDE" serve --addr "$2" --udp-addr off --per-ip-rate off >"$WORK/serve.log" 2>&1 &
	SPID=$!
	for ((i = 0; i < 100; i++)); do
		grep -q "^sonde: serving http" "$WORK/serve.log" && return 0
		kill -0 "$SPID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/serve.log" >&2
	die "sonde serve did not start"
}

stop() {
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	SPID=""
}

# run_path NAME URL RUNIN CONFIGURED_LOSS_PCT
run_path() {
	local i out
	for ((i = 0; i < REPEAT; i++)); do
		out=$WORK/$1-$i.json
		rm -rf "$WORK/profile"
		$3 node test/browser/webrtc.mjs "$2/?duration=2&rtc_duration=$DUR${SIZE:+&rtc_size=$SIZE}" "$WORK/$1-$i.png" "$out" "$WORK/profile" \
			>"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; die "$1: the page run failed"; }
		python3 - "$out" "$1" "$4" >>"$WORK/rows" <<'PY' || die "$1: cannot read the page's result"
import json, sys
r = json.load(open(sys.argv[1]))["result"]
w = r.get("webrtc") or {}
errs = [e for e in r.get("errors") or [] if "WebRTC" in e]
for e in errs:
    print("  " + e, file=sys.stderr)
for d in ("upload", "download"):
    x = w.get(d)
    if x:
        dg = (x.get("datagrams") or {}).get("loss_pct", float("nan"))
        print(sys.argv[2], d, sys.argv[3], x["goodput_bps"] / 1e6, x["messages_per_s"], x["loss_pct"], x["sent"], x["received"], x["loss_pattern"]["loss_periods"], x["jitter_ms"], x.get("malformed", 0), x["duplicates"], dg)
    else:
        print(sys.argv[2], d, sys.argv[3], "nan nan nan 0 0 0 nan 0 0 nan")
PY
		tail -2 "$WORK/rows" | awk -v i="$i" '{printf "  %-8s run %d %-8s %7.1f Mbit/s %7.0f msg/s  loss %6.2f %% (%d/%d, %d periods), datagrams %6.2f %%  jitter %.3f ms%s\n", $1, i, $2, $4, $5, $6, $8, $7, $9, $13, $10, ($11 + $12 > 0 ? sprintf("  malformed %d duplicates %d", $11, $12) : "")}'
	done
}

: >"$WORK/rows"
echo "WebRTC data channel, ${DUR} s per direction, ${REPEAT} runs per path ($("$CHROMIUM" --version 2>/dev/null))"

# Loopback, in a namespace of its own (nothing else on its loopback).
ip netns add "$NS" && ip -n "$NS" link set lo up || die "cannot create namespace $NS"
serve "ip netns exec $NS" 127.0.0.1:8080
run_path loopback http://127.0.0.1:8080 "ip netns exec $NS" 0
stop

# loss5_path: the page through `sonde lab` with 5 % random loss each way.
loss5_path() {
	cat >"$WORK/loss5.json" <<'JSON'
{"name": "rtc-loss5", "links": [{"name": "lossy", "both": "rate=1Gbit delay=1ms loss=0.05 limit=1000p"}]}
JSON
	"$SONDE" lab up "$WORK/loss5.json" --detach >"$WORK/lab.log" 2>&1 || { cat "$WORK/lab.log" >&2; die "sonde lab up failed"; }
	LAB_ID=$(awk '/^lab [0-9a-f]+ /{print $2; exit}' "$WORK/lab.log")
	SRV_IP=$(awk '$1 == "server" {print $2; exit}' "$WORK/lab.log")
	SRV_NS=$(awk '$1 == "server" {print $4; exit}' "$WORK/lab.log")
	CLI_NS=$(awk '$1 == "client" {print $4; exit}' "$WORK/lab.log")
	[[ -n $LAB_ID && -n $SRV_IP && -n $SRV_NS && -n $CLI_NS ]] || { cat "$WORK/lab.log" >&2; die "cannot read the lab's addresses"; }
	serve "ip netns exec $SRV_NS" "$SRV_IP:8080"
	run_path loss5 "http://$SRV_IP:8080" "ip netns exec $CLI_NS" 5
	stop
}

if [[ $LOSS == 1 ]]; then
	loss5_path
else
	echo "loss5: skipped (BENCH_LOSS=0)"
fi

python3 - "$WORK/rows" <<'PY'
import math, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    path, d, conf, gp, mps, loss, *rest = line.split()
    rows.setdefault((path, d, float(conf)), []).append((float(gp), float(mps), float(loss), float(rest[-1])))
def med(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else float("nan")
print()
print(f"{'path':<9} {'dir':<9} {'goodput':>9} {'msg/s':>8} {'loss':>7} {'dgram':>7} {'config':>7} {'runs':>5}  goal")
for (path, d, conf), v in rows.items():
    gp, mps, loss, dg = (med(x[i] for x in v) for i in range(4))
    ok = sum(1 for x in v if not math.isnan(x[0]))
    if conf == 0:
        goal = f">= 60 Mbit/s: {'met' if gp >= 60 else 'NOT met'} ({gp / 60:.2f}x); vs 300 msg/s ceiling {mps / 300:.0f}x"
    else:
        goal = (f"reports through {conf:.0f} % loss: {'met' if ok == len(v) else 'NOT met'} ({ok}/{len(v)} runs); "
                f"measured/configured: messages {loss / conf:.2f}, datagrams {dg / conf:.2f}")
    print(f"{path:<9} {d:<9} {gp:>9.1f} {mps:>8.0f} {loss:>6.2f}% {dg:>6.2f}% {conf:>6.0f}% {ok:>2}/{len(v):<2}  {goal}")
print("(goodput Mbit/s, medians over runs; loss: messages lost, per direction, as the data channel test counts them;")
print(" dgram: datagrams the sender's ICE pair sent that the receiver's did not receive, the path's loss;")
print(" where messages exceed datagrams, the sender's WebRTC stack dropped messages itself)")
PY
