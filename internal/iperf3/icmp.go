package iperf3

import (
	"context"
	"fmt"
	"net"
	"time"

	"golang.org/x/net/icmp"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
)

// icmpProbes is ICMP echo to the iperf3 server's host beside the
// TCP-connect probes, through the monitor's prober: from an unprivileged
// ping socket where net.ipv4.ping_group_range admits the process's group,
// else a raw socket (root or CAP_NET_RAW). An iperf3 server need not know
// about them, and unlike connect probes they run whether it is busy or not.
type icmpProbes struct {
	p      *probe.Prober
	socket string // "ping socket" or "raw socket"
	refNs  int64  // the suite's reference time on the prober's clock
	// samples drained from the prober's ring so far
	samples []model.ProbeSample
}

// startICMP starts echo probes to host every interval, timed from ref; an
// error says why ICMP is not allowed here.
func startICMP(ctx context.Context, host string, ref time.Time, interval time.Duration) (*icmpProbes, error) {
	socket, err := icmpSocket(host)
	if err != nil {
		return nil, err
	}
	rate := float64(time.Second) / float64(interval)
	rate = min(max(rate, probe.MinRate), probe.MaxRate)
	p, err := probe.New(ctx, probe.Config{Streams: []probe.StreamConfig{{
		Kind: model.ProbeICMP, Target: host, Rate: rate, Timeout: time.Second}}})
	if err != nil {
		return nil, err
	}
	k := &icmpProbes{p: p, socket: socket, refNs: p.Clock().Now() - time.Since(ref).Nanoseconds()}
	p.Start()
	return k, nil
}

// icmpSocket says which socket the prober will use (it tries a ping
// socket first, then a raw one), or why neither is allowed.
func icmpSocket(host string) (string, error) {
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			return "", fmt.Errorf("resolve %s: %v", host, err)
		}
		ip = ips[0]
	}
	v4 := ip.To4() != nil
	dgram, raw, laddr := "udp4", "ip4:icmp", "0.0.0.0"
	if !v4 {
		dgram, raw, laddr = "udp6", "ip6:ipv6-icmp", "::"
	}
	if c, err := icmp.ListenPacket(dgram, laddr); err == nil {
		c.Close()
		return "ping socket", nil
	}
	c, err := icmp.ListenPacket(raw, laddr)
	if err != nil {
		return "", fmt.Errorf("neither a ping socket (net.ipv4.ping_group_range) nor a raw socket (CAP_NET_RAW) is allowed: %v", err)
	}
	c.Close()
	return "raw socket", nil
}

// stop ends the probes, keeping what was measured. Probes still
// unanswered then are neither RTTs nor losses.
func (k *icmpProbes) stop() {
	k.p.Close()
	k.samples = k.p.Ring().Drain(k.samples)
}

// drain moves the ring's samples to k.samples (the ring is bounded:
// drained after every phase).
func (k *icmpProbes) drain() { k.samples = k.p.Ring().Drain(k.samples) }

// between returns the RTTs of the probes sent from from to to (seconds
// since the suite's reference) and the number of them lost.
func (k *icmpProbes) between(from, to float64) ([]model.RTTSample, int) {
	var out []model.RTTSample
	lost := 0
	for _, s := range k.samples {
		ts := float64(s.SentNs-k.refNs) / 1e9
		if ts < from || ts > to {
			continue
		}
		if s.Lost || s.RTTNs < 0 {
			lost++
			continue
		}
		out = append(out, model.RTTSample{TS: ts, RTTMs: float64(s.RTTNs) / 1e6})
	}
	return out, lost
}
