package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// RollupData is what a rollup keeps in its data column, a minute's
// (Rollup.Data) and an hour's (HourRow.Data) alike: the delay histograms'
// non-empty bins, the thresholds counted exactly with the probes within
// each, and the per-load-state shares. Counts are uint64 so that merged
// hours fit; a minute's fit uint32 (Rollup.Model checks).
//
// The store encodes bin numbers and counts only, never the bins' edges:
// what a bin stands for is the analysis's (internal/reliability), which
// may change its bins without a migration by giving the new layout a new
// version byte (rollupDataV2 is the layout of reliability.NumBins log bins).
type RollupData struct {
	Bins         []model.RollupBin // RTT histogram, strictly ascending bins
	FwdBins      []model.RollupBin // one-way delays (STAMP), strictly ascending
	RevBins      []model.RollupBin
	ThresholdsNs []int64
	Within       []uint64 // probes within each threshold (len(ThresholdsNs))
	ByLoad       []LoadCounts
}

// LoadCounts is one load state's share of a rollup.
type LoadCounts struct {
	Load       model.LoadState
	Sent, Lost uint64
	Within     []uint64 // len(RollupData.ThresholdsNs)
}

// Versions of the data encoding (its first byte). A JSON object (first
// byte '{') is the minutes' encoding before version 2, still read so that
// existing stores need no migration; version 1 is the hourly aggregate's
// encoding before version 2, likewise still read.
const (
	rollupDataV1 = 1
	rollupDataV2 = 2
)

// Bounds the decoder holds every count to before it allocates; each
// element also takes at least one byte of the input, so no count can
// exceed what is left of it.
const (
	maxRollupThresholds = 64  // the analysis takes at most 32
	maxRollupLoads      = 256 // model.LoadState is a byte
	maxRollupBin        = math.MaxUint16
)

var errRollupData = errors.New("store: bad rollup data")

// AppendBinary appends the version-2 encoding of d to b
// (encoding.BinaryAppender). Version 2, after its version byte, is
// unsigned varints:
//
//   - the number of thresholds n; if n > 0 a scale k (thresholds are
//     counted in units of 10^k ns, the largest dividing them all) and each
//     threshold as the zigzag difference from the previous one in those
//     units, then the n counts within;
//   - the RTT, forward and reverse histograms, each as its number of runs
//     of consecutive bins, then per run the gap from the end of the previous
//     run (from bin 0 for the first), the run's length − 1 and its counts:
//     a minute's bins are mostly consecutive, so a bin costs about one byte;
//   - the number of load states, each as state, sent, lost and its n counts
//     within.
//
// Bins out of order, more than maxRollupThresholds thresholds, or counts
// within not matching the thresholds are ErrBadInput.
func (d *RollupData) AppendBinary(b []byte) ([]byte, error) {
	n := len(d.ThresholdsNs)
	if n > maxRollupThresholds || len(d.Within) != n || len(d.ByLoad) > maxRollupLoads {
		return b, fmt.Errorf("%w: rollup of %d thresholds, %d counts within, %d load states", ErrBadInput, n, len(d.Within), len(d.ByLoad))
	}
	for _, l := range d.ByLoad {
		if len(l.Within) != n {
			return b, fmt.Errorf("%w: load state %d of a rollup has %d counts within for %d thresholds", ErrBadInput, l.Load, len(l.Within), n)
		}
	}
	b = append(b, rollupDataV2)
	b = binary.AppendUvarint(b, uint64(n))
	if n > 0 {
		k, unit := thresholdScale(d.ThresholdsNs)
		b = binary.AppendUvarint(b, uint64(k))
		prev := int64(0)
		for _, l := range d.ThresholdsNs {
			b = binary.AppendVarint(b, l/unit-prev)
			prev = l / unit
		}
		for _, w := range d.Within {
			b = binary.AppendUvarint(b, w)
		}
	}
	var err error
	for _, h := range [...][]model.RollupBin{d.Bins, d.FwdBins, d.RevBins} {
		if b, err = appendBins(b, h); err != nil {
			return b, err
		}
	}
	b = binary.AppendUvarint(b, uint64(len(d.ByLoad)))
	for _, l := range d.ByLoad {
		b = binary.AppendUvarint(b, uint64(l.Load))
		b = binary.AppendUvarint(b, l.Sent)
		b = binary.AppendUvarint(b, l.Lost)
		for _, w := range l.Within {
			b = binary.AppendUvarint(b, w)
		}
	}
	return b, nil
}

// thresholdScale is the largest k ≤ 18 with 10^k dividing every threshold,
// and 10^k: thresholds are round figures (50 ms, 1 s), so one byte each.
func thresholdScale(th []int64) (int, int64) {
	k, unit := 0, int64(1)
	for k < 18 {
		next := unit * 10
		for _, l := range th {
			if l%next != 0 {
				return k, unit
			}
		}
		k, unit = k+1, next
	}
	return k, unit
}

func appendBins(b []byte, bins []model.RollupBin) ([]byte, error) {
	runs := 0
	for i, x := range bins {
		if i > 0 && x.Bin <= bins[i-1].Bin {
			return b, fmt.Errorf("%w: rollup bins out of order (%d after %d)", ErrBadInput, x.Bin, bins[i-1].Bin)
		}
		if i == 0 || x.Bin != bins[i-1].Bin+1 {
			runs++
		}
	}
	b = binary.AppendUvarint(b, uint64(runs))
	end := 0 // one past the previous run's last bin
	for i := 0; i < len(bins); {
		j := i + 1
		for j < len(bins) && bins[j].Bin == bins[j-1].Bin+1 {
			j++
		}
		b = binary.AppendUvarint(b, uint64(int(bins[i].Bin)-end))
		b = binary.AppendUvarint(b, uint64(j-i-1))
		for _, x := range bins[i:j] {
			b = binary.AppendUvarint(b, uint64(x.N))
		}
		end = int(bins[j-1].Bin) + 1
		i = j
	}
	return b, nil
}

// UnmarshalBinary decodes data of any version (2, the hours' 1, or the
// minutes' JSON) into d, reusing d's slices (a report decodes millions of
// rows). Every count is checked against its bound and against the bytes
// left before it allocates; a damaged row is an error, never a panic or a
// large allocation. On error d holds no meaningful value.
func (d *RollupData) UnmarshalBinary(data []byte) error {
	*d = RollupData{Bins: d.Bins[:0], FwdBins: d.FwdBins[:0], RevBins: d.RevBins[:0],
		ThresholdsNs: d.ThresholdsNs[:0], Within: d.Within[:0], ByLoad: d.ByLoad[:0]}
	if len(data) == 0 {
		return fmt.Errorf("%w: empty", errRollupData)
	}
	switch data[0] {
	case '{':
		return d.unmarshalJSON(data)
	case rollupDataV1:
		r := reader{varints{b: data[1:], kind: errRollupData}}
		return r.decodeV1(d)
	case rollupDataV2:
		r := reader{varints{b: data[1:], kind: errRollupData}}
		return r.decodeV2(d)
	}
	return fmt.Errorf("%w: unknown encoding %#02x", errRollupData, data[0])
}

// reader decodes a rollup's Data.
type reader struct{ varints }

func (r *reader) decodeV2(d *RollupData) error {
	n := r.count("threshold count", maxRollupThresholds, 2)
	if n > 0 {
		k := r.uvarint("threshold scale")
		if k > 18 {
			r.fail("threshold scale")
			k = 0
		}
		unit := int64(1)
		for range k {
			unit *= 10
		}
		prev := int64(0)
		for range n {
			prev += r.varint("threshold")
			d.ThresholdsNs = append(d.ThresholdsNs, prev*unit)
		}
		for range n {
			d.Within = append(d.Within, r.uvarint("count within"))
		}
	}
	d.Bins = r.bins(d.Bins)
	d.FwdBins = r.bins(d.FwdBins)
	d.RevBins = r.bins(d.RevBins)
	r.loads(d, n)
	return r.finish(d)
}

func (r *reader) bins(out []model.RollupBin) []model.RollupBin {
	runs := r.count("bin run count", maxRollupBin+1, 3)
	end := uint64(0)
	for range runs {
		gap := r.uvarint("bin gap")
		ln := r.uvarint("bin run length")
		if r.err != nil {
			break
		}
		start := end + gap
		// A gap or length past the last bin is damage; each count takes a byte.
		if gap > maxRollupBin || ln > maxRollupBin || start+ln > maxRollupBin || ln >= uint64(len(r.b)) {
			r.fail("bin run")
			break
		}
		for i := range ln + 1 {
			c := r.uvarint("bin count")
			if c > math.MaxUint32 {
				r.fail("bin count")
			}
			out = append(out, model.RollupBin{Bin: uint16(start + i), N: uint32(c)})
		}
		end = start + ln + 1
	}
	if len(out) == 0 {
		return nil // empty decodes as nil, whatever was reused
	}
	return out
}

func (r *reader) loads(d *RollupData, n int) {
	nl := r.count("load state count", maxRollupLoads, 3+n)
	for range nl {
		st, sent, lost := r.uvarint("load state"), r.uvarint("load sent"), r.uvarint("load lost")
		if r.err == nil && st > math.MaxUint8 {
			r.fail("load state")
		}
		d.ByLoad = appendLoad(d.ByLoad, LoadCounts{Load: model.LoadState(st), Sent: sent, Lost: lost})
		l := &d.ByLoad[len(d.ByLoad)-1]
		for range n {
			l.Within = append(l.Within, r.uvarint("load count within"))
		}
	}
}

// appendLoad appends l, reusing the Within slice of an element that was
// there before (len < cap).
func appendLoad(ls []LoadCounts, l LoadCounts) []LoadCounts {
	if len(ls) < cap(ls) {
		ls = ls[:len(ls)+1]
		l.Within = ls[len(ls)-1].Within[:0]
		ls[len(ls)-1] = l
		return ls
	}
	return append(ls, l)
}

// finish checks that the data was used up and leaves empty slices nil, so
// that what decodes compares equal whatever d held before.
func (r *reader) finish(d *RollupData) error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return r.err
	}
	if len(d.ThresholdsNs) == 0 {
		d.ThresholdsNs, d.Within = nil, nil
	}
	if len(d.ByLoad) == 0 {
		d.ByLoad = nil
	}
	for i := range d.ByLoad {
		if len(d.ByLoad[i].Within) == 0 {
			d.ByLoad[i].Within = nil
		}
	}
	return nil
}

// decodeV1 reads the hourly aggregate's first encoding: thresholds as
// (threshold, count within) pairs, bins as (bin − previous bin, count)
// pairs, load states as (state, sent, lost, counts within); no one-way bins.
func (r *reader) decodeV1(d *RollupData) error {
	n := r.count("threshold count", maxRollupThresholds, 2)
	for range n {
		l, w := r.uvarint("threshold"), r.uvarint("count within")
		if r.err == nil && l > math.MaxInt64 {
			r.fail("threshold")
		}
		d.ThresholdsNs, d.Within = append(d.ThresholdsNs, int64(l)), append(d.Within, w)
	}
	nb := r.count("bin count", maxRollupBin+1, 2)
	bin := uint64(0)
	for i := range nb {
		db, c := r.uvarint("bin"), r.uvarint("bin count")
		bin += db
		if r.err == nil && (bin > maxRollupBin || (i > 0 && db == 0) || c > math.MaxUint32) {
			r.fail("bin")
		}
		if r.err != nil {
			break
		}
		d.Bins = append(d.Bins, model.RollupBin{Bin: uint16(bin), N: uint32(c)})
	}
	if len(d.Bins) == 0 {
		d.Bins = nil
	}
	d.FwdBins, d.RevBins = nil, nil
	r.loads(d, n)
	return r.finish(d)
}

// rollupJSON is the minutes' data before version 2.
type rollupJSON struct {
	Bins         []model.RollupBin  `json:"bins"`
	FwdBins      []model.RollupBin  `json:"fwd_bins,omitempty"`
	RevBins      []model.RollupBin  `json:"rev_bins,omitempty"`
	ThresholdsNs []int64            `json:"thresholds_ns"`
	Within       []uint32           `json:"within"`
	ByLoad       []model.RollupLoad `json:"by_load,omitempty"`
}

func (d *RollupData) unmarshalJSON(data []byte) error {
	var j rollupJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("%w: %w", errRollupData, err)
	}
	if len(j.ThresholdsNs) > maxRollupThresholds || len(j.ByLoad) > maxRollupLoads {
		return fmt.Errorf("%w: %d thresholds, %d load states", errRollupData, len(j.ThresholdsNs), len(j.ByLoad))
	}
	d.Bins, d.FwdBins, d.RevBins, d.ThresholdsNs = j.Bins, j.FwdBins, j.RevBins, j.ThresholdsNs
	d.Within = widen(j.Within)
	d.ByLoad = nil
	for _, l := range j.ByLoad {
		d.ByLoad = append(d.ByLoad, LoadCounts{Load: l.Load, Sent: uint64(l.Sent), Lost: uint64(l.Lost), Within: widen(l.Within)})
	}
	return nil
}

func widen(w []uint32) []uint64 {
	if w == nil {
		return nil
	}
	out := make([]uint64, len(w))
	for i, v := range w {
		out[i] = uint64(v)
	}
	return out
}
