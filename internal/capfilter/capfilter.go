// Package capfilter compiles capture filter expressions, a subset of
// tcpdump's pcap-filter language, into classic BPF programs over IP packets
// (the program's byte 0 is the IP header's first byte, as in a cooked
// AF_PACKET socket or a raw-IP capture). The same program runs in the
// kernel on a live capture (SO_ATTACH_FILTER) and in x/net/bpf's virtual
// machine on capture files, so the two cannot disagree.
//
// The language:
//
//	[ip|ip6] [tcp|udp|sctp] [src|dst] host ADDR
//	[ip|ip6] [tcp|udp|sctp] [src|dst] net ADDR/LEN
//	[ip|ip6] [tcp|udp|sctp] [src|dst] port N|SERVICE
//	[ip|ip6] [tcp|udp|sctp] [src|dst] portrange LOW-HIGH
//	ip, ip6, tcp, udp, sctp, icmp, icmp6, ip6 tcp, ...    protocol only
//	[ip|ip6] proto N|NAME                                 IP protocol number
//	less N, greater N                                     IP length <= N, >= N
//	src ADDR, dst ADDR                                    host is the default
//	not|!, and|&&, or||| and parentheses; a bare value repeats the last
//	primitive's qualifiers: "port 80 or 443".
//
// As in libpcap: port and portrange without a protocol mean TCP, UDP or
// SCTP; IPv4 port primitives skip non-first fragments; IPv6 port
// primitives read the transport header right after the fixed header (no
// extension headers), and IPv6 protocol primitives look through one
// fragment header. Link-layer primitives (ether, vlan, arp) do not exist
// here: the packets are IP packets.
package capfilter

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// Snap is what an accepting program returns: keep the whole packet.
const Snap = 262144

// Filter is a compiled expression.
type Filter struct {
	expr string
	raw  []bpf.RawInstruction
	vm   *bpf.VM
}

// Compile parses and compiles expr. An empty expression gives a nil
// Filter, which matches every packet.
func Compile(expr string) (*Filter, error) {
	tree, err := parse(expr)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", expr, err)
	}
	if tree == nil {
		return nil, nil
	}
	prog, err := compile(lower(tree))
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", expr, err)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("filter %q: assemble: %w", expr, err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", expr, err)
	}
	return &Filter{expr: expr, raw: raw, vm: vm}, nil
}

// String returns the expression.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.expr
}

// Match reports whether an IP packet passes the filter. A nil Filter
// passes everything.
func (f *Filter) Match(ip []byte) bool {
	if f == nil {
		return true
	}
	n, err := f.vm.Run(ip)
	return err == nil && n > 0
}

// Program returns the assembled program, for SO_ATTACH_FILTER.
func (f *Filter) Program() []bpf.RawInstruction { return f.raw }
