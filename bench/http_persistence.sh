#!/usr/bin/env bash
# Seed 003's persistence experiment: a 5-object page (HTML, a background
# image and 3 images; 45 KB) loaded over the emulated slow satellite
# (satellite-geo-slow: 136 kbit/s, 2000 ms RTT, 4% loss each way) with
# HTTP/1.0 (one connection per object), HTTP/1.0 keep-alive and HTTP/1.1
# persistent, RUNS times each; page completion time as sonde analyze finds
# it in the lab's capture (client end), printed beside the seed's table.
#
# Needs root. Usage: bench/http_persistence.sh  (RUNS=3 PROFILE=satellite-geo-slow)
# The server and client are test/accuracy/http's helpers (Go net/http
# server, scripted client); the seed used Apache and Netscape 4.7 / 6.1 on
# different pages, so the figures are for comparison, not a reproduction.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
PROFILE=${PROFILE:-satellite-geo-slow}
MODES=${MODES:-1.0,1.0-keepalive,1.1}
if [ "$(id -u)" != 0 ]; then
	echo "http_persistence.sh: needs root (network namespaces)" >&2
	exit 1
fi
tmp=$(mktemp -d /tmp/sonde-httpbench.XXXXXX)
state="$tmp/state"
srv_pid=""
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null || true
	bin/sonde lab down --state-dir "$state" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
make -s build
go test -c -o "$tmp/httphelper" ./test/accuracy/http
addr=198.18.1.2:8080
for run in $(seq 1 "$RUNS"); do
	mkdir -p "$tmp/cap$run" "$state"
	bin/sonde lab up "$PROFILE" --detach --seed "$run" --capture-dir "$tmp/cap$run" --state-dir "$state" >/dev/null
	bin/sonde lab exec --state-dir "$state" server -- env SONDE_HTTP_TEST_HELPER=server SONDE_HTTP_TEST_ADDR=$addr \
		"$tmp/httphelper" -test.run='^$' &
	srv_pid=$!
	sleep 1
	timeout 600 bin/sonde lab exec --state-dir "$state" client -- env SONDE_HTTP_TEST_HELPER=client \
		SONDE_HTTP_TEST_ADDR=$addr SONDE_HTTP_TEST_MODES="$MODES" "$tmp/httphelper" -test.run='^$' >"$tmp/client$run.json"
	kill "$srv_pid" 2>/dev/null || true
	wait "$srv_pid" 2>/dev/null || true
	srv_pid=""
	bin/sonde lab down --state-dir "$state" >/dev/null
	bin/sonde analyze --if-index 0 --json - "$tmp"/cap$run/*.pcapng >"$tmp/analysis$run.json"
	echo "run $run done" >&2
done
python3 - "$tmp" "$RUNS" "$MODES" "$PROFILE" <<'PY'
import json, statistics, sys
tmp, runs, modes, profile = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4]
rows = {m: [] for m in modes}
conns = {m: [] for m in modes}
clientT = {m: [] for m in modes}
checks = []
for r in range(1, runs + 1):
    a = json.load(open(f"{tmp}/analysis{r}.json"))
    pages = a.get("http_pages") or []
    if len(pages) != len(modes):
        print(f"run {r}: {len(pages)} page loads found, expected {len(modes)}", file=sys.stderr)
        continue
    log = json.load(open(f"{tmp}/client{r}.json"))
    found = sum(p["requests"] for p in pages)
    bad = sum(1 for c in a.get("tcp") or [] if c.get("http") and c["http"].get("incomplete"))
    checks.append(f"run {r}: {found} requests found, the client made {len(log)}; {bad} connections incomplete")
    for m, p in zip(modes, pages):
        rows[m].append(p["completion_s"])
        conns[m].append(p["connections"])
        recs = [x for x in log if x["mode"] == m]
        first = min(x["conn_ns"] for x in recs if x["conn_ns"] > 0)
        clientT[m].append((max(x["end_ns"] for x in recs) - first) / 1e9)
print(f"5-object page (45 KB) over {profile}, page completion from the capture (sonde analyze), {runs} runs")
print(f"{'mode':<16}{'mean s':>8}{'median s':>10}{'runs':>30}{'client s (mean)':>17}{'connections':>13}")
for m in modes:
    v = rows[m]
    if not v:
        continue
    print(f"{m:<16}{statistics.mean(v):>8.3f}{statistics.median(v):>10.3f}{' '.join(f'{x:.2f}' for x in v):>30}"
          f"{statistics.mean(clientT[m]):>17.3f}{statistics.median(conns[m]):>13.0f}")
for c in checks:
    print("  " + c)
if rows.get("1.0-keepalive") and rows.get("1.1"):
    k, p = statistics.mean(rows["1.0-keepalive"]), statistics.mean(rows["1.1"])
    print(f"HTTP/1.1 persistent / HTTP/1.0 keep-alive: {p / k:.3f}")
print()
print("Seed 003, table 4 (slow satellite, mean of 3 runs; Netscape 4.7 = HTTP/1.0 keep-alive, 6.1 = HTTP/1.1 persistent):")
for site, a, b in [("smirnoff.freeserve.co.uk", 6.687, 6.026), ("pegasus.phys.uh.edu", 8.996, 9.103),
                   ("burbank.co.uk", 10.175, 9.946), ("test.globalweb.co.uk", 12.342, 11.682)]:
    print(f"  {site:<26}{a:>8.3f} s {b:>8.3f} s   ratio {b / a:.3f}")
PY
