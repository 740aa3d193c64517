package iperf3

import (
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// udpDemux receives the first datagram of every UDP stream on the
// server's port and hands it to the test waiting for streams from that
// client's address: tests run at once, so the address decides (two tests
// from one address creating UDP streams at the same moment are served one
// after the other: the first waiting takes the streams it still needs).
type udpDemux struct {
	pc      *net.UDPConn
	mu      sync.Mutex
	waiting map[string][]*session
	done_   chan struct{}
}

func newUDPDemux(pc *net.UDPConn) *udpDemux {
	return &udpDemux{pc: pc, waiting: map[string][]*session{}, done_: make(chan struct{})}
}

func (d *udpDemux) wait(host string, s *session) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting[host] = append(d.waiting[host], s)
}

func (d *udpDemux) done(host string, s *session) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.waiting[host]
	for i, x := range l {
		if x == s {
			l = append(l[:i], l[i+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(d.waiting, host)
	} else {
		d.waiting[host] = l
	}
}

func (d *udpDemux) close() {
	d.pc.Close()
	<-d.done_
}

// run answers connect datagrams until the socket closes. Datagrams from
// no waiting test are dropped: a stranger gets no reply at all.
func (d *udpDemux) run() {
	defer close(d.done_)
	buf := make([]byte, 64)
	local := d.pc.LocalAddr().(*net.UDPAddr)
	for {
		n, from, err := d.pc.ReadFromUDP(buf)
		if err != nil {
			if isConnRefused(err) {
				continue
			}
			return
		}
		if n != 4 {
			continue
		}
		d.mu.Lock()
		var ses *session
		for _, s := range d.waiting[from.IP.String()] {
			s.mu.Lock()
			need := len(s.streams) < s.want
			s.mu.Unlock()
			if need {
				ses = s
				break
			}
		}
		d.mu.Unlock()
		if ses == nil {
			continue
		}
		u, err := dialUDP(&net.UDPAddr{IP: local.IP, Port: local.Port, Zone: local.Zone}, from)
		if err != nil {
			continue
		}
		if !ses.addUDP(u) {
			u.Close()
			continue
		}
		// The reply in the byte order the client wrote its message.
		var reply [4]byte
		if binary.LittleEndian.Uint32(buf[:4]) == UDPConnectMsg {
			binary.LittleEndian.PutUint32(reply[:], UDPConnectReply)
		} else {
			binary.BigEndian.PutUint32(reply[:], UDPConnectReply)
		}
		u.SetWriteDeadline(time.Now().Add(time.Second))
		u.Write(reply[:])
		u.SetWriteDeadline(time.Time{})
	}
}
