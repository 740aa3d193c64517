package capfilter

import (
	"encoding/binary"
	"errors"

	"golang.org/x/net/bpf"
)

// cond is a boolean tree over single comparisons: what primitives lower to
// and what the code generator reads.
type cond struct {
	op   byte // '&', '|', '!', 't'
	l, r *cond
	t    test
}

// test loads a field, masks it, adds a constant and compares it.
type test struct {
	indirect bool   // offset from the IPv4 header's end (ldx 4*([0]&0xf))
	off      uint32 // byte offset
	size     int    // 1, 2 or 4 bytes
	mask     uint32 // 0: none
	add      uint32
	cmp      bpf.JumpTest
	val      uint32
}

func and(a, b *cond) *cond { return &cond{op: '&', l: a, r: b} }
func or(a, b *cond) *cond  { return &cond{op: '|', l: a, r: b} }
func not(a *cond) *cond    { return &cond{op: '!', l: a} }
func is(t test) *cond      { return &cond{op: 't', t: t} }

// field compares an unmasked field for equality.
func field(off uint32, size int, val uint32) *cond {
	return is(test{off: off, size: size, cmp: bpf.JumpEqual, val: val})
}

var (
	isV4       = is(test{off: 0, size: 1, mask: 0xf0, cmp: bpf.JumpEqual, val: 0x40})
	isV6       = is(test{off: 0, size: 1, mask: 0xf0, cmp: bpf.JumpEqual, val: 0x60})
	firstFrag4 = is(test{off: 6, size: 2, mask: 0x1fff, cmp: bpf.JumpEqual, val: 0})
)

// lower turns a parsed tree into comparisons.
func lower(n *node) *cond {
	switch n.op {
	case '&':
		return and(lower(n.l), lower(n.r))
	case '|':
		return or(lower(n.l), lower(n.r))
	case '!':
		return not(lower(n.l))
	}
	return lowerPrim(n.p)
}

func lowerPrim(p prim) *cond {
	switch p.kind {
	case "proto":
		return family(p.ver, func(v int) *cond {
			if p.proto < 0 {
				return nil // "ip", "ip6": the version test alone
			}
			return protoIs(v, p.proto)
		})
	case "host", "net":
		c := family(p.ver, func(v int) *cond { return addrIs(v, p.dir, p.pfx.Addr().AsSlice(), p.pfx.Bits()) })
		if p.proto >= 0 {
			c = and(c, protoIs(p.ver, p.proto))
		}
		return c
	case "port", "portrange":
		return family(p.ver, func(v int) *cond { return portIs(v, p) })
	case "less":
		return family(0, func(v int) *cond { return lengthIs(v, bpf.JumpLessOrEqual, uint32(p.lo)) })
	case "greater":
		return family(0, func(v int) *cond { return lengthIs(v, bpf.JumpGreaterOrEqual, uint32(p.lo)) })
	}
	panic("capfilter: unknown primitive " + p.kind)
}

// family applies body to IPv4, IPv6 or (ver 0) either, behind a version
// test; body may return nil for "the version test alone".
func family(ver int, body func(v int) *cond) *cond {
	one := func(v int) *cond {
		c := isV4
		if v == 6 {
			c = isV6
		}
		if b := body(v); b != nil {
			c = and(c, b)
		}
		return c
	}
	if ver != 0 {
		return one(ver)
	}
	return or(one(4), one(6))
}

// protoIs tests the transport protocol; for IPv6 also behind one fragment
// header, as libpcap does.
func protoIs(v, proto int) *cond {
	if v == 4 {
		return field(9, 1, uint32(proto))
	}
	return or(field(6, 1, uint32(proto)), and(field(6, 1, 44), field(40, 1, uint32(proto))))
}

// addrIs compares the source and/or destination address with a prefix.
func addrIs(v int, dir string, addr []byte, bits int) *cond {
	src, dst := uint32(12), uint32(16)
	if v == 6 {
		src, dst = 8, 24
	}
	match := func(base uint32) *cond {
		var c *cond
		for w := 0; w*32 < bits; w++ {
			mask := ^uint32(0)
			if rest := bits - w*32; rest < 32 {
				mask = ^uint32(0) << (32 - rest)
			}
			word := binary.BigEndian.Uint32(addr[4*w:]) & mask
			t := test{off: base + uint32(4*w), size: 4, cmp: bpf.JumpEqual, val: word}
			if mask != ^uint32(0) {
				t.mask = mask
			}
			if c == nil {
				c = is(t)
			} else {
				c = and(c, is(t))
			}
		}
		if c == nil { // a /0 net: any address of the family
			return is(test{off: 0, size: 1, mask: 0xf0, cmp: bpf.JumpEqual, val: uint32(v) << 4})
		}
		return c
	}
	switch dir {
	case "src":
		return match(src)
	case "dst":
		return match(dst)
	}
	return or(match(src), match(dst))
}

// portIs tests a port or port range of TCP, UDP or SCTP (or the one named).
func portIs(v int, p prim) *cond {
	protos := []int{6, 17, 132}
	if p.proto >= 0 {
		protos = []int{p.proto}
	}
	var proto *cond
	for _, n := range protos {
		t := field(9, 1, uint32(n))
		if v == 6 {
			t = field(6, 1, uint32(n))
		}
		if proto == nil {
			proto = t
		} else {
			proto = or(proto, t)
		}
	}
	at := func(off uint32) *cond {
		lo := test{indirect: v == 4, off: off, size: 2, cmp: bpf.JumpEqual, val: uint32(p.lo)}
		if v == 6 {
			lo.off += 40
		}
		if p.lo == p.hi {
			return is(lo)
		}
		hi := lo
		lo.cmp, hi.cmp, hi.val = bpf.JumpGreaterOrEqual, bpf.JumpLessOrEqual, uint32(p.hi)
		return and(is(lo), is(hi))
	}
	var ports *cond
	switch p.dir {
	case "src":
		ports = at(0)
	case "dst":
		ports = at(2)
	default:
		ports = or(at(0), at(2))
	}
	if v == 4 {
		return and(proto, and(firstFrag4, ports))
	}
	return and(proto, ports)
}

// lengthIs compares the IP packet's length (from its header, so that a
// capture cut short by its snap length still filters on the real length).
func lengthIs(v int, cmp bpf.JumpTest, n uint32) *cond {
	if v == 4 {
		return is(test{off: 2, size: 2, cmp: cmp, val: n})
	}
	return is(test{off: 4, size: 2, add: 40, cmp: cmp, val: n})
}

// code generation: every condition jumps forward to a true or a false label.

type label int

type slot struct {
	ins    bpf.Instruction
	jt, jf label // for conditional jumps (ins is a JumpIf)
}

type gen struct {
	code   []slot
	labels int
	pos    map[label]int
}

func (g *gen) newLabel() label { g.labels++; return label(g.labels) }

func (g *gen) place(l label) { g.pos[l] = len(g.code) }

func (g *gen) emit(i bpf.Instruction) { g.code = append(g.code, slot{ins: i}) }

func (g *gen) cond(c *cond, t, f label) {
	switch c.op {
	case '&':
		mid := g.newLabel()
		g.cond(c.l, mid, f)
		g.place(mid)
		g.cond(c.r, t, f)
	case '|':
		mid := g.newLabel()
		g.cond(c.l, t, mid)
		g.place(mid)
		g.cond(c.r, t, f)
	case '!':
		g.cond(c.l, f, t)
	default:
		g.test(c.t, t, f)
	}
}

func (g *gen) test(x test, t, f label) {
	if x.indirect {
		g.emit(bpf.LoadMemShift{Off: 0})
		g.emit(bpf.LoadIndirect{Off: x.off, Size: x.size})
	} else {
		g.emit(bpf.LoadAbsolute{Off: x.off, Size: x.size})
	}
	if x.mask != 0 {
		g.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: x.mask})
	}
	if x.add != 0 {
		g.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: x.add})
	}
	g.code = append(g.code, slot{ins: bpf.JumpIf{Cond: x.cmp, Val: x.val}, jt: t, jf: f})
}

// compile generates the program: accept returns Snap, reject 0.
func compile(c *cond) ([]bpf.Instruction, error) {
	g := &gen{pos: map[label]int{}}
	accept, reject := g.newLabel(), g.newLabel()
	g.cond(c, accept, reject)
	g.place(accept)
	g.emit(bpf.RetConstant{Val: Snap})
	g.place(reject)
	g.emit(bpf.RetConstant{Val: 0})
	prog := make([]bpf.Instruction, len(g.code))
	for i, s := range g.code {
		j, ok := s.ins.(bpf.JumpIf)
		if !ok {
			prog[i] = s.ins
			continue
		}
		st, sf := g.pos[s.jt]-i-1, g.pos[s.jf]-i-1
		if st < 0 || sf < 0 {
			return nil, errors.New("internal error: backward jump")
		}
		if st > 255 || sf > 255 {
			return nil, errors.New("too long for classic BPF's 8-bit jumps: split it")
		}
		j.SkipTrue, j.SkipFalse = uint8(st), uint8(sf)
		prog[i] = j
	}
	return prog, nil
}
