package passive

import (
	"encoding/binary"
	"testing"
)

// A capture with a short snap length keeps only the headers; payload sizes
// must come from the IP header, as tcptrace does, or goodput is wrong.
func TestPayloadLengthFromIPHeader(t *testing.T) {
	const payload = 1448
	pkt := make([]byte, 20+32+payload)
	pkt[0] = 0x45
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[9] = 6
	pkt[20+12] = 8 << 4 // 32-byte TCP header
	snapped := pkt[:96]
	var ip ipPacket
	if !decodeIP(snapped, &ip) {
		t.Fatal("IPv4 header not decoded")
	}
	var s tcpSegment
	if !decodeTCP(ip.l4, ip.l4Len, &s) {
		t.Fatal("TCP header not decoded")
	}
	if s.payloadLen != payload || len(s.payload) != 96-52 {
		t.Fatalf("payload %d on the wire (%d captured), want %d (%d)", s.payloadLen, len(s.payload), payload, 96-52)
	}
}
