#!/usr/bin/env bash
# Many clients behind one address: BENCH_CLIENTS (100) concurrent
# `sonde test -t 2s -n 1` from 127.0.0.1 against one `sonde serve
# --max-concurrent BENCH_CLIENTS --per-ip-rate off`, as from an office or a
# carrier-grade NAT. Every test the server admits must pass: the per-IP
# connection cap (64) must not refuse an admitted test's streams and probes.
# Prints how many passed, the failures' last lines, and the load average.
# Exits 0 when all passed, 1 when one failed, 2 when it cannot run.
#
# Environment: BENCH_CLIENTS (100), SONDE (bin/sonde).
set -u -o pipefail

cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
CLIENTS=${BENCH_CLIENTS:-100}
[[ $CLIENTS =~ ^[1-9][0-9]*$ ]] && ((CLIENTS <= 1000)) || die "BENCH_CLIENTS must be 1-1000, got '$CLIENTS'"
[[ -x $SONDE ]] || die "$SONDE not found: run 'make build'"
command -v python3 >/dev/null || die "python3 not installed"

WORK=$(mktemp -d /tmp/sonde-many.XXXXXX)
cleanup() {
	local left
	left=$(jobs -p)
	[[ -n $left ]] && kill $left 2>/dev/null
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
udp=$(python3 -c 'import socket; s = socket.socket(type=socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SONDE" serve --addr "127.0.0.1:$port" --udp-addr "127.0.0.1:$udp" --max-concurrent "$CLIENTS" \
	--per-ip-rate off >"$WORK/serve.log" 2>&1 &
SERVER=$!
for ((i = 0; i < 50; i++)); do
	[[ -n $(ss -Hltn "sport = :$port") ]] && break
	kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/serve.log" >&2; die "sonde serve did not start"; }
	sleep 0.1
done

START=$(date +%s.%N)
PIDS=()
for ((i = 0; i < CLIENTS; i++)); do
	timeout 90 "$SONDE" test "127.0.0.1:$port" -t 2s -n 1 -q --no-progress \
		--json "$WORK/t-$i.json" >/dev/null 2>"$WORK/t-$i.err" &
	PIDS+=($!)
done
OK=0
declare -A CODES=()
for i in "${!PIDS[@]}"; do
	rc=0
	wait "${PIDS[$i]}" || rc=$?
	if ((rc == 0)); then
		OK=$((OK + 1))
	else
		CODES[$rc]=$((${CODES[$rc]:-0} + 1))
		echo "  client $i: exit $rc: $(tail -n 1 "$WORK/t-$i.err")" >&2
	fi
done
END=$(date +%s.%N)
codes=""
for rc in "${!CODES[@]}"; do codes+="exit $rc: ${CODES[$rc]} "; done
refused=$(curl -s "http://127.0.0.1:$port/metrics" 2>/dev/null | awk '/^sonde_connections_refused_total/ {s += $2} END {print s + 0}')
kill "$SERVER" 2>/dev/null
wait "$SERVER" 2>/dev/null
echo "$OK of $CLIENTS concurrent 'sonde test -t 2s -n 1' from one address passed in $(python3 -c "print(f'{$END - $START:.1f}')") s;" \
	"connections refused by a cap: $refused; failures by exit code: ${codes:-none}"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at end"
((OK == CLIENTS))
