package spin

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/passive/spinbit"
	"github.com/sonde-project/sonde/internal/pcap"
)

// quicPacket is what both parsers say about one QUIC packet of a datagram.
type quicPacket struct {
	spin  string // "" for long headers
	fixed string
	dcid  string
}

// TestTsharkCrossCheck runs a short sonde-quic transfer through a lab link
// and checks, for every frame of the capture, that sonde's QUIC header
// parser and tshark's dissector agree on each packet's spin bit (short
// headers), fixed bit (quinn greases it, RFC 9287) and destination
// connection ID (whose length sonde learns from the handshake), including
// coalesced packets.
func TestTsharkCrossCheck(t *testing.T) {
	needRoot(t)
	bin := quicBin(t)
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (make apt-deps installs it)")
	}
	if testing.Short() {
		t.Skip("lab runs skipped in -short")
	}
	capFile, _, _ := runQUIC(t, bin, point{mbit: 20, rttMs: 32, seconds: 2}, "up")
	ours := sondePackets(t, capFile)
	theirs := tsharkPackets(t, capFile)
	if len(ours) != len(theirs) {
		t.Fatalf("sonde read %d frames, tshark %d", len(ours), len(theirs))
	}
	var short, spinning, greased, coalesced, bad, dcids int
	for i := range ours {
		o, th := ours[i], theirs[i]
		if len(o) > 1 {
			coalesced++
		}
		if len(o) != len(th) {
			bad++
			if bad <= 5 {
				t.Errorf("frame %d: sonde %d QUIC packets %v, tshark %d %v", i+1, len(o), o, len(th), th)
			}
			continue
		}
		for j := range o {
			if th[j].dcid == "?" || th[j].dcid == "" {
				// tshark knows only the connection IDs of long headers;
				// those issued later (NEW_CONNECTION_ID, encrypted) it
				// cannot size. Compare the bits only.
				th[j].dcid = o[j].dcid
			} else {
				dcids++
			}
			if o[j] != th[j] {
				bad++
				if bad <= 5 {
					t.Errorf("frame %d packet %d: sonde %+v, tshark %+v", i+1, j, o[j], th[j])
				}
			}
			if o[j].spin != "" {
				short++
				if o[j].spin == "1" {
					spinning++
				}
			}
			if o[j].fixed == "0" {
				greased++
			}
		}
	}
	t.Logf("%d frames, %d short headers (%d with spin 1), %d greased fixed bits, %d coalesced datagrams, %d DCIDs compared, %d disagreements",
		len(ours), short, spinning, greased, coalesced, dcids, bad)
	if short < 100 || spinning == 0 || spinning == short {
		t.Errorf("capture has %d short headers, %d with spin set: not a spinning transfer", short, spinning)
	}
	if dcids < 10 {
		t.Errorf("only %d DCIDs compared with tshark", dcids)
	}
	if bad > 0 {
		t.Errorf("%d disagreements with tshark", bad)
	}
}

// sondePackets parses every frame of a capture with spinbit.Parse, learning
// the short-header DCID length from the peer's SCID as the analyser does.
func sondePackets(t *testing.T, file string) [][]quicPacket {
	t.Helper()
	// dcidLen by destination port: the short headers a host receives use
	// the SCID it chose in its long headers.
	dcidLen := map[uint16]int{}
	var out [][]quicPacket
	err := pcap.ReadFile(file, func(p *pcap.Packet) {
		var pk []quicPacket
		ip := pcap.Network(p.LinkType, p.Data)
		if p.Interface != 0 {
			return // a lab capture holds each packet at both link ends
		}
		if len(ip) >= 20 && ip[0]>>4 == 4 && ip[9] == 17 {
			udp := ip[int(ip[0]&15)*4:]
			sport, dport := binary.BigEndian.Uint16(udp), binary.BigEndian.Uint16(udp[2:])
			b := udp[8:]
			var h spinbit.Header
			for len(b) > 0 {
				rest, err := spinbit.Parse(b, dcidLen[dport], &h)
				if err != nil {
					break
				}
				q := quicPacket{fixed: bit(h.FixedBit), dcid: hex.EncodeToString(h.DCID)}
				if h.Long {
					if h.Type == spinbit.Initial || h.Type == spinbit.Handshake {
						dcidLen[sport] = len(h.SCID)
					}
				} else {
					q.spin = bit(h.Spin)
				}
				pk = append(pk, q)
				b = rest
			}
		}
		out = append(out, pk)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// tsharkPackets runs tshark on the capture: per frame of interface 0, each QUIC packet's
// spin bit, fixed bit and DCID.
func tsharkPackets(t *testing.T, file string) [][]quicPacket {
	t.Helper()
	cmd := exec.Command("tshark", "-n", "-r", file, "-d", "udp.port==4433,quic",
		"-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=;",
		"-e", "frame.interface_id", "-e", "quic.header_form", "-e", "quic.spin_bit", "-e", "quic.fixed_bit", "-e", "quic.dcid")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	var frames [][]quicPacket
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		f := strings.Split(line, "\t")
		for len(f) < 5 {
			f = append(f, "")
		}
		if f[0] != "0" {
			continue
		}
		var pk []quicPacket
		if f[1] != "" {
			forms := strings.Split(f[1], ";")
			spins := split(f[2])
			fixed := split(f[3])
			dcids := split(f[4])
			si := 0
			for i, form := range forms {
				q := quicPacket{fixed: norm(at(fixed, i)), dcid: strings.ReplaceAll(at(dcids, i), ":", "")}
				if form == "0" || form == "False" {
					q.spin = norm(at(spins, si))
					si++
				}
				pk = append(pk, q)
			}
		}
		frames = append(frames, pk)
	}
	return frames
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ";")
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "?"
}

// norm maps tshark's boolean spellings to 0/1.
func norm(s string) string {
	switch s {
	case "True", "1":
		return "1"
	case "False", "0":
		return "0"
	}
	return s
}
