#!/usr/bin/env bash
# The lab proofs of sonde mbm (issue 14) beside seed 002's results: runs
# test/mbm (the built binary, `sonde serve` and `sonde mbm` in the lab's
# namespaces, every verdict checked against the configured path and the
# emulator's ground truth) with more runs per point than make test, and
# prints each proof's table:
#   1. interconnection: 8.1.1 on a short link with its own and with the
#      end-to-end target RTT, and end to end (UDP and TCP), n runs each;
#   2. sustained bursts: 8.1.1 and 8.5.1 by derate on a 10-packet queue,
#      loss quartiles and a text box plot with p0 and p1;
#   3. composition: subpaths composed by `sonde mbm compose` against the
#      measured end-to-end loss (Q-Q pairs, max deviation), the SPRT's
#      packets-to-decide histogram.
# Every result the proofs accept, and each composition (with the
# end-to-end run as --path), is kept in a temporary directory
# (SONDE_MBM_LAB_OUT) that `sonde mbm summary` then reads: its text is
# printed after the tables, its HTML (box plots of loss per derate with
# p0 and p1, the packets-to-decide histogram, the Q-Q plot of composed
# against measured loss) written to MBM_LAB_HTML (default
# bench/out/mbm_lab.html, not committed).
# A report, not a test: it exits 0 whatever the figures (a test that
# failed or skipped is printed with its reason), non-zero only for bad
# settings. Needs root (lab namespaces and TUN devices).
#
# Environment: MBM_LAB_RUNS (runs per point, default 5), MBM_LAB_DERATES
# (default 0.4,0.5,0.6,0.7,0.8,0.9,1), MBM_LAB_LOSSES (AB:BC pairs,
# default 0:0.01,0.005:0.005,0.01:0.01,0.02:0.01,0.02:0.02),
# MBM_LAB_FLOOR (no FAIL before this many packets, default 2000; 0 is
# the seed's SPRT without a floor), MBM_LAB_TESTS (a go test -run
# pattern, default all three), MBM_LAB_HTML (the summary's HTML report).
set -u -o pipefail
cd "$(dirname "$0")/.."

die() {
	echo "bench: $*" >&2
	exit 2
}
[[ $(id -u) == 0 ]] || die "needs root (lab namespaces and TUN devices)"
RUNS=${MBM_LAB_RUNS:-5}
DERATES=${MBM_LAB_DERATES:-0.4,0.5,0.6,0.7,0.8,0.9,1}
LOSSES=${MBM_LAB_LOSSES:-0:0.01,0.005:0.005,0.01:0.01,0.02:0.01,0.02:0.02}
FLOOR=${MBM_LAB_FLOOR:-2000}
TESTS=${MBM_LAB_TESTS:-TestInterconnect|TestSustainedBurst|TestComposition}
[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 1 && RUNS <= 50)) || die "MBM_LAB_RUNS=$RUNS: want 1 to 50"
[[ $DERATES =~ ^[0-9.]+(,[0-9.]+)*$ ]] || die "MBM_LAB_DERATES=$DERATES: want a list of derates, e.g. 0.4,0.6,1"
[[ $LOSSES =~ ^[0-9.]+:[0-9.]+(,[0-9.]+:[0-9.]+)*$ ]] || die "MBM_LAB_LOSSES=$LOSSES: want AB:BC pairs, e.g. 0.01:0.02"
[[ $FLOOR =~ ^[0-9]+$ ]] || die "MBM_LAB_FLOOR=$FLOOR: want a packet count"
HTML=${MBM_LAB_HTML:-bench/out/mbm_lab.html}
# The report's path is checked before anything is measured.
mkdir -p "$(dirname "$HTML")" || die "MBM_LAB_HTML=$HTML: cannot make its directory"
if [[ -e $HTML ]]; then
	[[ -f $HTML && -w $HTML ]] || die "MBM_LAB_HTML=$HTML: not a writable file"
else
	: >"$HTML" && rm -f "$HTML" || die "MBM_LAB_HTML=$HTML: cannot be written"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/log
# One build, for the tests (SONDE_BIN) and the summary.
go build -o "$tmp/sonde" ./cmd/sonde || die "go build failed"
echo "uname -r: $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg); $RUNS run(s) a point" >&2
SONDE_BIN=$tmp/sonde SONDE_MBM_LAB_OUT=$tmp/results \
	SONDE_MBM_LAB_RUNS=$RUNS SONDE_MBM_LAB_DERATES=$DERATES SONDE_MBM_LAB_LOSSES=$LOSSES SONDE_MBM_LAB_FLOOR=$FLOOR \
	go test -count=1 -timeout 60m -run "^($TESTS)\$" -v ./test/mbm/ >"$out" 2>&1
rc=$?
# Each proof's table follows a PROOF line in the verbose log; the tests'
# retries and skips say what the host did.
awk '
	/PROOF$/ { p = 1; next }
	/^(=== |--- |PASS|FAIL|ok )/ { p = 0 }
	/: lab [0-9a-f]+: profile / { sub(/^ +/, ""); print }
	p { sub(/^        /, ""); print }
	/try [0-9]+:|--- (FAIL|SKIP)|_test.go:[0-9]+: .*(want|outside|differs)/ && !p { print }
' "$out"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# The same runs aggregated by sonde mbm summary, as a user would.
if compgen -G "$tmp/results/*.json" >/dev/null; then
	echo
	echo "sonde mbm summary of the $(ls "$tmp/results" | wc -l) saved results and compositions (HTML: $HTML):"
	"$tmp/sonde" mbm summary "$tmp/results" --html "$HTML" || echo "bench: sonde mbm summary failed" >&2
else
	echo "bench: no result was kept: no summary" >&2
fi
if ((rc != 0)); then
	echo "bench: the test run failed (exit $rc):" >&2
	grep -v '^        ' "$out" | tail -20 >&2
fi
exit 0
