package emulator

import (
	"encoding/binary"
	"testing"
)

// ipv4Sum is the IPv4 header checksum computed from scratch.
func ipv4Sum(h []byte) uint16 {
	var sum uint32
	for i := 0; i < 20; i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

func TestRemarkDSCP(t *testing.T) {
	v4 := make([]byte, 28)
	v4[0] = 0x45
	v4[1] = 46<<2 | 1 // EF, ECT(1)
	binary.BigEndian.PutUint16(v4[2:], 28)
	v4[8], v4[9] = 64, 17
	binary.BigEndian.PutUint16(v4[10:], ipv4Sum(v4))
	if RemarkDSCP(v4, 0, 8) {
		t.Fatal("remarked a packet whose DSCP is not the one asked for")
	}
	if !RemarkDSCP(v4, 46, 8) {
		t.Fatal("EF packet not remarked")
	}
	if v4[1] != 8<<2|1 {
		t.Fatalf("TOS %#x, want CS1 with ECN bits kept", v4[1])
	}
	if got, want := binary.BigEndian.Uint16(v4[10:]), ipv4Sum(v4); got != want {
		t.Fatalf("checksum %#x after remark, want %#x", got, want)
	}

	v6 := make([]byte, 40)
	tc := byte(46<<2 | 2)
	v6[0], v6[1] = 0x60|tc>>4, tc<<4
	if !RemarkDSCP(v6, -1, 0) {
		t.Fatal("IPv6 packet not remarked")
	}
	if got := v6[0]<<4 | v6[1]>>4; got != 2 || v6[0]>>4 != 6 {
		t.Fatalf("IPv6 traffic class %#x (version %d), want DSCP 0 with ECN 2", got, v6[0]>>4)
	}
}

func TestParseRemark(t *testing.T) {
	p, err := ParseParams("remark=ef:cs1", Params{})
	if err != nil || p.Remark == nil || p.Remark.From != 46 || p.Remark.To != 8 {
		t.Fatalf("remark=ef:cs1 → %+v, %v", p.Remark, err)
	}
	p, err = ParseParams("remark=0", Params{})
	if err != nil || p.Remark.From != -1 || p.Remark.To != 0 {
		t.Fatalf("remark=0 → %+v, %v", p.Remark, err)
	}
	if _, err := ParseParams("remark=99", Params{}); err == nil {
		t.Fatal("remark=99 accepted")
	}
}
