#!/usr/bin/env bash
# Lighthouse (npm, pinned 12.2.3: the last for Node 20) on the page's result
# view: one page run stores a result in a `sonde serve` on loopback, then
# Lighthouse audits its permanent page /r/ID with the desktop and the
# mobile presets and prints the performance, accessibility and best
# practices scores (issue #23's goals: >= 90, >= 95, >= 95). A report, not
# a test: it exits 0 whatever the scores, non-zero when a tool fails.
# Lighthouse is installed into a temporary directory (146 npm packages),
# not into web/: the page's own dependencies stay small.
#
# Environment: SONDE (bin/sonde), CHROMIUM (/usr/bin/chromium),
# LIGHTHOUSE_DIR (a directory holding node_modules/lighthouse; installed
# into a temporary one when unset).
set -u -o pipefail

cd "$(dirname "$0")/.."
. bench/lib.sh
SONDE=${SONDE:-bin/sonde}
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[[ -x $SONDE ]] || die "no $SONDE (make build)"
[[ -x $CHROMIUM ]] || die "no $CHROMIUM"
work=$(mktemp -d)
trap 'kill "${srv:-}" 2>/dev/null; rm -rf "$work"' EXIT
lh=${LIGHTHOUSE_DIR:-}
if [[ -z $lh ]]; then
	lh=$work/lh
	mkdir -p "$lh" && (cd "$lh" && npm init -y >/dev/null && npm install --no-audit --no-fund lighthouse@12.2.3 >/dev/null) ||
		die "npm install lighthouse@12.2.3 failed"
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SONDE" serve --addr "127.0.0.1:$port" --db :memory: >"$work/serve.log" 2>&1 &
srv=$!
for _ in $(seq 50); do curl -fso /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
(cd test/browser && node --no-warnings --experimental-websocket run.mjs "http://127.0.0.1:$port/?duration=3&rtc_duration=1" \
	"$work/run.png" "$work/run.json" >/dev/null) || die "page run failed"
id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["result"]["id"])' "$work/run.json") || die "no result id"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for preset in desktop mobile; do
	flag=()
	[[ $preset == desktop ]] && flag=(--preset=desktop)
	CHROME_PATH=$CHROMIUM "$lh/node_modules/.bin/lighthouse" "http://127.0.0.1:$port/r/$id" "${flag[@]}" --quiet \
		--chrome-flags="--headless=new --no-sandbox" --only-categories=performance,accessibility,best-practices \
		--output=json --output-path="$work/$preset.json" || die "lighthouse $preset failed"
	python3 - "$preset" "$work/$preset.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
s = {k: round(v["score"] * 100) for k, v in d["categories"].items()}
print(f"{sys.argv[1]:8} performance {s['performance']:3}  accessibility {s['accessibility']:3}  best practices {s['best-practices']:3}")
for a in d["audits"].values():
    if a.get("score") is not None and a["score"] < 0.9 and a.get("scoreDisplayMode") in ("binary", "numeric"):
        print(f"  {a['id']}: {a.get('displayValue', a['score'])}")
PY
done
