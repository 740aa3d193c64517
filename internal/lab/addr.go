package lab

import (
	"fmt"
	"net/netip"
)

// linkAddr is host h of link i's /24.
func linkAddr(i, h int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18 + byte(i>>8), byte(i), byte(h)})
}

// NodeAddr is the address of node k of a chain of n links (0 the client,
// n the server, router-k between) on link i (1-based): a node has an end
// on the link before it (its server-side end, 198.18.k.2) and on the
// link after it (its client-side end, 198.18.(k+1).1), and no address on
// any other link.
func NodeAddr(k, n, i int) (netip.Addr, error) {
	switch {
	case n < 1 || n > MaxLinks || k < 0 || k > n:
		return netip.Addr{}, fmt.Errorf("node %d of a chain of %d links: no such node", k, n)
	case i == k+1 && i <= n:
		return linkAddr(i, 1), nil
	case i == k && i >= 1:
		return linkAddr(i, 2), nil
	}
	return netip.Addr{}, fmt.Errorf("node %d has no end on link %d (only on links %d and %d)", k, i, k, k+1)
}

// Subpath is the profile of links from+1 … to (1-based, inclusive): the
// part of the chain between node from and node to, whose GroundTruth is
// the configured path of a measurement between those two nodes.
func (p Profile) Subpath(from, to int) (Profile, error) {
	if from < 0 || to > len(p.Links) || from >= to {
		return Profile{}, fmt.Errorf("subpath from node %d to node %d of a chain of %d links: want 0 ≤ from < to ≤ %d", from, to, len(p.Links), len(p.Links))
	}
	s := p
	s.Name = fmt.Sprintf("%s[%d-%d]", p.Name, from, to)
	s.Links = append([]Link(nil), p.Links[from:to]...)
	return s, nil
}
