package pcap

import (
	"encoding/binary"
	"strconv"
)

// LinkType is a pcap LINKTYPE_ value.
type LinkType uint32

// Link types understood by Network.
const (
	LinkNull     LinkType = 0   // BSD loopback, host byte order family
	LinkEthernet LinkType = 1   // Ethernet II, 802.1Q/802.1ad tags
	LinkRawOld   LinkType = 12  // raw IP on some BSDs (DLT_RAW)
	LinkRawOld2  LinkType = 14  // raw IP on OpenBSD
	LinkPPP      LinkType = 9   // PPP (RFC 1661), optional HDLC address/control
	LinkPPPHDLC  LinkType = 50  // PPP in HDLC-like framing (RFC 1662)
	LinkRaw      LinkType = 101 // raw IPv4 or IPv6
	LinkCHDLC    LinkType = 104 // Cisco HDLC: address, control, EtherType
	LinkLoop     LinkType = 108 // OpenBSD loopback, network byte order family
	LinkSLL      LinkType = 113 // Linux cooked capture v1
	LinkIPv4     LinkType = 228
	LinkIPv6     LinkType = 229
	LinkSLL2     LinkType = 276 // Linux cooked capture v2
)

// linkNames are the tcpdump names of common link types, for messages about
// the ones sonde does not read.
var linkNames = map[LinkType]string{
	LinkNull: "NULL", LinkEthernet: "EN10MB", 6: "IEEE802_5", 7: "ARCNET_BSD", 8: "SLIP", LinkPPP: "PPP",
	10: "FDDI", LinkRawOld: "RAW", LinkRawOld2: "RAW", LinkPPPHDLC: "PPP_HDLC", 51: "PPP_ETHER", 100: "ATM_RFC1483",
	LinkRaw: "RAW", LinkCHDLC: "C_HDLC", 105: "IEEE802_11", 107: "FRELAY", LinkLoop: "LOOP", LinkSLL: "LINUX_SLL",
	114: "LTALK", 117: "PFLOG", 119: "PRISM_HEADER", 122: "IP_OVER_FC", 127: "IEEE802_11_RADIOTAP",
	143: "DOCSIS", 163: "IEEE802_11_AVS", 187: "BLUETOOTH_HCI_H4", 189: "USB_LINUX", 192: "PPI",
	195: "IEEE802_15_4", 201: "BLUETOOTH_HCI_H4_WITH_PHDR", 220: "USB_LINUX_MMAPPED", LinkIPv4: "IPV4",
	LinkIPv6: "IPV6", 239: "NFLOG", 249: "USBPCAP", 253: "NETLINK", 263: "ETHERNET_MPACKET", LinkSLL2: "LINUX_SLL2",
}

// String returns the link type's tcpdump name and number, e.g. "PPP (9)".
func (l LinkType) String() string {
	if n, ok := linkNames[l]; ok {
		return n + " (" + strconv.Itoa(int(l)) + ")"
	}
	return "link type " + strconv.Itoa(int(l))
}

// Supported reports whether Network reads the link type.
func Supported(l LinkType) bool {
	switch l {
	case LinkNull, LinkEthernet, LinkRawOld, LinkRawOld2, LinkPPP, LinkPPPHDLC, LinkRaw, LinkCHDLC, LinkLoop,
		LinkSLL, LinkIPv4, LinkIPv6, LinkSLL2:
		return true
	}
	return false
}

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
	case LinkPPP, LinkPPPHDLC:
		return pppPayload(frame)
	case LinkCHDLC:
		if len(frame) < 4 {
			return nil
		}
		return etherPayload(binary.BigEndian.Uint16(frame[2:]), frame[4:])
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

// pppPayload reads a PPP frame: an optional HDLC address and control
// (0xff 0x03), then the protocol, one byte when compressed (odd) or two.
func pppPayload(b []byte) []byte {
	if len(b) >= 2 && b[0] == 0xff && b[1] == 0x03 {
		b = b[2:]
	}
	if len(b) == 0 {
		return nil
	}
	proto, n := uint16(b[0]), 1
	if b[0]&1 == 0 {
		if len(b) < 2 {
			return nil
		}
		proto, n = binary.BigEndian.Uint16(b), 2
	}
	switch proto {
	case 0x21, 0x57: // IPv4, IPv6
		return ipOnly(b[n:])
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
