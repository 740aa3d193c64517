package mbm

import "math"

// Wald's approximations (Wald 1947, ignoring the overshoot of the lines)
// of the SPRT's operating characteristic L(p) = P(PASS) and its average
// sample number E[n] at a true mark rate p, without truncation or floor.
// They give --plan's expected packets; the simulation tests check them.

// OC is Wald's approximation of P(PASS) at a mark rate p in [0, 1].
func (l Lines) OC(p float64) float64 {
	h, ok := l.waldH(p)
	if !ok {
		return l.H2 / (l.H1 + l.H2) // p = S: the limit h → 0
	}
	// L(h) = (A^h − 1)/(A^h − B^h) with ln A = K·H2, ln B = −K·H1.
	a, b := h*l.K*l.H2, -h*l.K*l.H1
	if math.IsInf(h, 1) {
		return 1
	}
	if math.IsInf(h, -1) {
		return 0
	}
	if a > 0 {
		// Divided through by A^h, so that a large h cannot overflow.
		return -math.Expm1(-a) / -math.Expm1(b-a)
	}
	return math.Expm1(a) / (math.Exp(a) - math.Exp(b))
}

// ASN is Wald's approximation of the average packets to a decision at a
// mark rate p in [0, 1].
func (l Lines) ASN(p float64) float64 {
	if _, ok := l.waldH(p); !ok {
		return l.H1 * l.H2 / (l.S * (1 - l.S))
	}
	oc := l.OC(p)
	// Each packet moves m − S·n by p − S on average; the walk stops at
	// −H1 (PASS, probability oc) or H2.
	return (oc*(-l.H1) + (1-oc)*l.H2) / (p - l.S)
}

// MaxASN is the largest average sample number, at p = S (no drift):
// H1·H2/(S(1 − S)) by Wald's identity.
func (l Lines) MaxASN() float64 { return l.H1 * l.H2 / (l.S * (1 - l.S)) }

// waldH solves p(h) = (1 − b^h)/(a^h − b^h) for h, a = p1/p0 and
// b = (1−p1)/(1−p0) written through K and S: ln a = K(1−S), ln b = −K·S.
// ok is false at p = S (h = 0), where the formulas have a limit.
func (l Lines) waldH(p float64) (h float64, ok bool) {
	const eps = 1e-9
	if math.Abs(p-l.S) < eps*l.S {
		return 0, false
	}
	if p <= 0 {
		return math.Inf(1), true
	}
	if p >= 1 {
		return math.Inf(-1), true
	}
	la, lb := l.K*(1-l.S), -l.K*l.S
	ph := func(h float64) float64 {
		return -math.Expm1(h*lb) / (math.Exp(h*la) - math.Exp(h*lb))
	}
	// p(h) decreases in h; p(1) = p0, p(−1) = p1. Widen, then bisect.
	lo, hi := -1.0, 1.0
	for i := 0; i < 12 && ph(lo) < p; i++ {
		lo *= 2
	}
	for i := 0; i < 12 && ph(hi) > p; i++ {
		hi *= 2
	}
	for i := 0; i < 200 && hi-lo > 1e-12*math.Max(1, math.Abs(hi)); i++ {
		mid := (lo + hi) / 2
		if mid == 0 {
			mid = 1e-12
		}
		if ph(mid) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	h = (lo + hi) / 2
	if math.Abs(h) < 1e-9 {
		return 0, false
	}
	return h, true
}
