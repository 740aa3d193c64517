# Shared by the bench scripts, sourced after they cd to the repository:
#   . bench/lib.sh
# A bench is a report, not a test: it exits 0 whatever the figures, 2 when
# it cannot run (die), non-zero when a tool fails.

# die prints one line and exits 2: the bench cannot run here.
die() {
	echo "bench: $*" >&2
	exit 2
}

# veth_pair A B SUFFIX NET makes the namespaces A and B joined by the veth
# pair vaSUFFIX (NET.1/24, in A) and vbSUFFIX (NET.2/24, in B), with their
# loopbacks up; NET is a /24 of 198.18.0.0/15, e.g. 198.18.250. The caller
# deletes the namespaces (which deletes the pair).
veth_pair() {
	local a=$1 b=$2 suffix=$3 net=$4
	ip netns add "$a" && ip netns add "$b" || return 1
	ip link add "va$suffix" netns "$a" type veth peer name "vb$suffix" netns "$b" || return 1
	ip -n "$a" addr add "$net.1/24" dev "va$suffix" &&
		ip -n "$b" addr add "$net.2/24" dev "vb$suffix" &&
		ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
		ip -n "$a" link set "va$suffix" up && ip -n "$b" link set "vb$suffix" up
}

# workdir NAME makes WORK, a temporary directory /tmp/sonde-NAME.XXXXXX,
# and traps the script's exit to kill its remaining jobs and remove WORK.
workdir() {
	WORK=$(mktemp -d "/tmp/sonde-$1.XXXXXX") || die "cannot make a temporary directory"
	trap _workdir_cleanup EXIT
	trap 'exit 130' INT TERM
}

_workdir_cleanup() {
	local left
	left=$(jobs -p)
	[[ -n $left ]] && kill $left 2>/dev/null
	wait 2>/dev/null
	[[ -n ${BENCH_KEEP:-} ]] && echo "kept $WORK" >&2 || rm -rf "$WORK"
}
