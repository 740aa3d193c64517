#!/usr/bin/env bash
# Fleet scale bench (issue 15): monitors × targets writing 1-minute
# rollups into a local PostgreSQL this script starts (Debian's package,
# initdb and pg_ctl as the postgres user when run as root, a temporary
# data directory, a random port on 127.0.0.1), then `sonde fleet
# aggregate` and `sonde fleet report --since` over the whole range, from
# the command line. The ingest, size and in-process report figures come
# from bench/fleetbench (read its doc comment). A report, not a test: it
# exits 0 whatever the figures, non-zero only when a tool fails.
#
# Environment: FLEET_MONITORS (1000), FLEET_TARGETS (4), FLEET_DAYS (2: days
# of minute rollups, each 1,440 × monitors × targets rows), FLEET_HOUR_DAYS
# (0: earlier days of hourly aggregate rows written directly, so the report
# covers FLEET_DAYS + FLEET_HOUR_DAYS), FLEET_WRITERS (4), PG_OPTS (extra
# server options; default: PostgreSQL's defaults, fsync on), GO (go).
set -eu -o pipefail
cd "$(dirname "$0")/.."
MON=${FLEET_MONITORS:-1000}
TGT=${FLEET_TARGETS:-4}
DAYS=${FLEET_DAYS:-2}
HDAYS=${FLEET_HOUR_DAYS:-0}
WRITERS=${FLEET_WRITERS:-4}
GO=${GO:-go}

BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$BIN/initdb" ] || { echo "fleet.sh: PostgreSQL not found (/usr/lib/postgresql/*/bin/initdb; make apt-deps)" >&2; exit 1; }
DIR=$(mktemp -d /tmp/sonde-fleetbench-XXXXXX)
AS=()
if [ "$(id -u)" = 0 ]; then chown postgres: "$DIR"; AS=(runuser -u postgres --); fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$DIR"
}
trap cleanup EXIT
"${AS[@]}" "$BIN/initdb" -D "$DIR/data" -U sonde --auth=trust -E UTF8 --no-instructions >/dev/null
"${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w -t 60 \
	-o "-k $DIR -p $PORT -c listen_addresses=127.0.0.1 ${PG_OPTS:-}" start >/dev/null
"${AS[@]}" "$BIN/psql" -h "$DIR" -p "$PORT" -U sonde -d postgres -qc "CREATE DATABASE fleet" >/dev/null
URL="postgres://sonde@127.0.0.1:$PORT/fleet?sslmode=disable"
echo "PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') at 127.0.0.1:$PORT (${PG_OPTS:-default settings}); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

$GO build -o "$DIR/sonde" ./cmd/sonde
$GO build -o "$DIR/fleetbench" ./bench/fleetbench
"$DIR/fleetbench" -store "$URL" -monitors "$MON" -targets "$TGT" -days "$DAYS" -hour-days "$HDAYS" -writers "$WRITERS"

SINCE=$(python3 -c "print(f'{$DAYS + $HDAYS:g}d')")
echo "CLI: sonde fleet aggregate (nothing left to merge) and sonde fleet report --since $SINCE:"
"$DIR/sonde" fleet aggregate --store "$URL"
start=$(date +%s.%N)
"$DIR/sonde" fleet report --store "$URL" --since "$SINCE" --json "$DIR/report.json" --quiet
end=$(date +%s.%N)
python3 -c "print(f'CLI REPORT --since $SINCE: {$end - $start:.2f} s (goal < 10 s), JSON {__import__(\"os\").path.getsize(\"$DIR/report.json\")} bytes')"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
