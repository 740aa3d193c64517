package pcap

import "encoding/binary"

// LinkType is a pcap LINKTYPE_ value.
type LinkType uint32

// Link types understood by Network.
const (
	LinkNull     LinkType = 0   // BSD loopback, host byte order family
	LinkEthernet LinkType = 1   // Ethernet II, 802.1Q/802.1ad tags
	LinkRawOld   LinkType = 12  // raw IP on some BSDs (DLT_RAW)
	LinkRawOld2  LinkType = 14  // raw IP on OpenBSD
	LinkRaw      LinkType = 101 // raw IPv4 or IPv6
	LinkLoop     LinkType = 108 // OpenBSD loopback, network byte order family
	LinkSLL      LinkType = 113 // Linux cooked capture v1
	LinkIPv4     LinkType = 228
	LinkIPv6     LinkType = 229
	LinkSLL2     LinkType = 276 // Linux cooked capture v2
)

// EtherTypes sonde follows.
const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86DD
	etherVLAN  = 0x8100
	etherQinQ  = 0x88A8
	etherQinQ2 = 0x9100
)

// Network returns the IPv4 or IPv6 packet inside a frame of the given link
// type, or nil if the frame carries something else or is too short. At most
// 8 VLAN tags are skipped.
func Network(link LinkType, frame []byte) []byte {
	switch link {
	case LinkRaw, LinkRawOld, LinkRawOld2, LinkIPv4, LinkIPv6:
		return ipOnly(frame)
	case LinkEthernet:
		if len(frame) < 14 {
			return nil
		}
		return etherPayload(binary.BigEndian.Uint16(frame[12:]), frame[14:])
	case LinkSLL:
		if len(frame) < 16 {
			return nil
		}
		return etherPayload(binary.BigEndian.Uint16(frame[14:]), frame[16:])
	case LinkSLL2:
		if len(frame) < 20 {
			return nil
		}
		return etherPayload(binary.BigEndian.Uint16(frame[0:]), frame[20:])
	case LinkNull, LinkLoop:
		if len(frame) < 4 {
			return nil
		}
		// The family is in the writer's byte order for LinkNull: accept
		// either, the values do not collide.
		fam := binary.LittleEndian.Uint32(frame)
		if link == LinkLoop || fam > 0xffff {
			fam = binary.BigEndian.Uint32(frame)
		}
		switch fam {
		case 2, 24, 28, 30, 10: // AF_INET; AF_INET6 on NetBSD/OpenBSD, FreeBSD, Darwin, Linux
			return ipOnly(frame[4:])
		}
	}
	return nil
}

func etherPayload(typ uint16, b []byte) []byte {
	for range 8 {
		switch typ {
		case etherIPv4, etherIPv6:
			return ipOnly(b)
		case etherVLAN, etherQinQ, etherQinQ2:
			if len(b) < 4 {
				return nil
			}
			typ = binary.BigEndian.Uint16(b[2:])
			b = b[4:]
		default:
			return nil
		}
	}
	return nil
}

func ipOnly(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if v := b[0] >> 4; v != 4 && v != 6 {
		return nil
	}
	return b
}
