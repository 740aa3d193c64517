package report

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// TestTextWidths: the widths computed without formatting are those of
// the formatted cells, and appendFixed2's text strconv's, at the edges where a digit is gained (9.995 and
// its neighbours), for negative values, -0, NaN, infinities and large
// values, and for random records' whole rows.
func TestTextWidths(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 0.004, 0.005, 0.0049999, -0.001, 0.125, 1, 9.99, 9.994999, 9.995, 9.995000001,
		99.995, 999.995, 1e11 - 0.005, 1e12 - 0.005, 1e12, 1e15, 1e300, -1e300, math.NaN(), math.Inf(1), math.Inf(-1),
		math.MaxFloat64, math.SmallestNonzeroFloat64, -9.995, -99.9951}
	for p := 10.0; p <= 1e13; p *= 10 {
		e := p - 0.005
		for _, v := range []float64{e, math.Nextafter(e, 0), math.Nextafter(e, 2*p), math.Nextafter(math.Nextafter(e, 0), 0), e - 1e-6, e + 1e-6, e - 1e-5, e + 1e-5} {
			vals = append(vals, v, -v)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		vals = append(vals, r.Float64()*math.Pow(10, float64(r.IntN(16)-3)), r.NormFloat64()*1e4, math.Float64frombits(r.Uint64()))
	}
	for i := range 10000 {
		vals = append(vals, float64(i)/1000, float64(i)/200, float64(i)/8+0.005, -float64(i)/1000, 1e9-float64(i)/100, float64(i)*0.01+0.005)
	}
	for _, v := range vals {
		want := strconv.FormatFloat(v, 'f', 2, 64)
		if got := fixed2Width(v); got != len(want) {
			t.Fatalf("fixed2Width(%v) = %d, want %d (%s)", v, got, len(want), want)
		}
		if got := string(appendFixed2(nil, v)); got != want {
			t.Fatalf("appendFixed2(%v) = %s, want %s", v, got, want)
		}
	}
	for _, v := range []int64{0, 1, 9, 10, -1, -10, 99, 100, math.MaxInt64, math.MinInt64, -math.MaxInt64, int64(r.Uint64()), int64(r.Uint64())} {
		if got, want := intWidth(v), len(strconv.FormatInt(v, 10)); got != want {
			t.Fatalf("intWidth(%d) = %d, want %d", v, got, want)
		}
	}
	f := func() float64 {
		switch r.IntN(4) {
		case 0:
			return vals[r.IntN(len(vals))]
		case 1:
			return 0
		}
		return r.Float64() * math.Pow(10, float64(r.IntN(8)-2))
	}
	u := func() uint64 { return randCount(r) }
	rtt := func() model.RTTSummary {
		if r.IntN(4) == 0 {
			return model.RTTSummary{}
		}
		return model.RTTSummary{Samples: int(u() >> 1), MinMs: f(), MedianMs: f(), MaxMs: f()}
	}
	dir := func() model.TCPDir {
		return model.TCPDir{Packets: u(), DataBytes: u(), GoodputBps: f() * 1e6, Retransmissions: u(), OutOfOrder: u(), DupACKs: u(), ZeroWindows: u()}
	}
	for i := range 20000 {
		c := model.TCPConn{A: "10.0.0." + strconv.Itoa(r.IntN(300)) + ":" + strconv.Itoa(r.IntN(70000)), B: "[2001:db8::" + strconv.Itoa(i) + "]:443",
			AB: dir(), BA: dir(), TSFull: rtt(), TSSideA: rtt(), TSSideB: rtt(), SeqAckSideA: rtt(), SeqAckSideB: rtt()}
		if r.IntN(3) == 0 {
			c.A += "é" // runes, not bytes
		}
		var got, want table
		var rc rowCells
		got.measureTCP(&c)
		tcpTextRows(&c, &rc, want.measureCells)
		if !slices.Equal(got.width, want.width) {
			t.Fatalf("record %+v: widths %v, want %v", c, got.width, want.width)
		}
	}
}

// TestWriteAnalyzeTextColumns: the text with the columns sized as the
// records were kept is the text that sizes them itself; columns that did
// not see every record (TCP or QUIC) are not used.
func TestWriteAnalyzeTextColumns(t *testing.T) {
	r := streamFixture()
	r.TCP[2].A = "[2001:db8::1234:5678]:65535" // the widest
	r.TCP[0].AB.Packets = 123456789
	r.QUIC = append(r.QUIC, model.QUICConn{Client: "[2001:db8::1]:50000", Server: "198.18.0.2:443", Version: "draft-29", Spin: "off",
		Packets: [2]uint64{123456, 7}, Rejected: []model.Count{{Name: "stale", Count: 12}, {Name: "too long", Count: 3}}}) // the widest
	var want bytes.Buffer
	if err := WriteAnalyzeText(&want, r); err != nil {
		t.Fatal(err)
	}
	var cols TextColumns
	for i := range r.TCP {
		cols.AddTCP(&r.TCP[i])
	}
	for i := range r.QUIC {
		cols.AddQUIC(&r.QUIC[i])
	}
	var got bytes.Buffer
	if err := WriteAnalyzeTextColumns(&got, r, &cols); err != nil || got.String() != want.String() {
		t.Fatalf("%v\n%s\nwant\n%s", err, got.String(), want.String())
	}
	var part TextColumns
	part.AddTCP(&r.TCP[0])
	part.AddQUIC(&r.QUIC[0])
	got.Reset()
	if err := WriteAnalyzeTextColumns(&got, r, &part); err != nil || got.String() != want.String() {
		t.Fatalf("columns of part of the records: %v\n%s\nwant\n%s", err, got.String(), want.String())
	}
}

// TestQUICTextWidths: the QUIC table's widths computed without
// formatting are those of the formatted cells.
func TestQUICTextWidths(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	u := func() uint64 { return randCount(r) }
	rtt := func() model.RTTSummary {
		if r.IntN(3) == 0 {
			return model.RTTSummary{}
		}
		return model.RTTSummary{Samples: r.IntN(1 << 20), MinMs: r.Float64() * 10, MedianMs: r.Float64() * 1e3, MaxMs: r.NormFloat64() * 1e5}
	}
	for i := range 20000 {
		q := model.QUICConn{Client: "10.0.0.1:" + strconv.Itoa(r.IntN(70000)), Server: "[2001:db8::" + strconv.Itoa(i) + "]:443",
			Version: []string{"", "v1", "draft-29", "0xfaceb00c"}[r.IntN(4)], Spin: []string{"", "on", "off", "grease é"}[r.IntN(4)],
			Packets: [2]uint64{u(), u()}, Edges: [2]int{int(u()), -r.IntN(3)}, Glitches: [2]int{r.IntN(100), int(u())},
			SpinRTT: [2]model.RTTSummary{rtt(), rtt()}, Component: [2]model.RTTSummary{rtt(), rtt()}}
		for range r.IntN(4) {
			q.Rejected = append(q.Rejected, model.Count{Name: []string{"stale", "too long", "é"}[r.IntN(3)], Count: int(u()) - 5})
		}
		var got, want table
		var rc rowCells
		got.measureQUIC(&q)
		quicTextRow(&q, &rc)
		want.measureCells(&rc)
		if !slices.Equal(got.width, want.width) {
			t.Fatalf("flow %+v: widths %v, want %v", q, got.width, want.width)
		}
	}
}

// randCount is a random count: mostly below 2^40, at times any uint64.
func randCount(r *rand.Rand) uint64 {
	if r.IntN(8) == 0 {
		return r.Uint64()
	}
	return uint64(r.IntN(1 << r.IntN(40)))
}
