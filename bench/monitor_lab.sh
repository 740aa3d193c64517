#!/bin/sh
# monitor_lab.sh: the long version of test/monitor's lab proof of
# `sonde monitor` (issue 13). The same scenario across the adsl lab with
# every load phase stretched SCALE times (default 6: a 2-minute upload,
# a 1.5-minute download) and 6 idle minutes on each side of the 30 s
# outage, so that the baseline-step detector itself judges the outage;
# then the CoDel and FQ-CoDel upload runs. Needs root and iperf3; takes
# about 22 minutes at the default scale. The table of measured against
# the profile's ground truth is printed for each run (go test -v).
#
#   sudo bench/monitor_lab.sh [SCALE]
set -eu
scale=${1:-6}
case $scale in
[1-9] | 10) ;;
*)
	echo "monitor_lab.sh: SCALE must be an integer 1 to 10, got '$scale'" >&2
	exit 2
	;;
esac
if [ "$(id -u)" -ne 0 ]; then
	echo "monitor_lab.sh: needs root (network namespaces, TUN devices)" >&2
	exit 2
fi
cd "$(dirname "$0")/.."
SONDE_MONITOR_LAB_SCALE=$scale exec go test -count=1 -timeout 40m -v -run 'TestMonitorADSL|TestMonitorAQM' ./test/monitor/
