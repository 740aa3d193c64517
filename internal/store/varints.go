package store

import (
	"encoding/binary"
	"fmt"
	"math"
)

// varints reads the fields of the store's binary encodings (the
// journal's records, a rollup's Data): varints, length-prefixed bytes and
// floats, every length checked against the bytes left before use. The
// first failure sticks, wrapped in kind with what was being read, so a
// decoder checks err once at its end.
type varints struct {
	b    []byte
	err  error
	kind error  // the sentinel every failure wraps
	pre  string // before what failed ("bad ")
}

func (r *varints) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s%s", r.kind, r.pre, what)
	}
}

func (r *varints) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *varints) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes reads a length and that many bytes (at most max), not copied.
func (r *varints) bytes(what string, max int) []byte {
	n := r.uvarint(what)
	if r.err != nil {
		return nil
	}
	if n > uint64(max) || n > uint64(len(r.b)) {
		r.fail(what)
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

// float reads 8 bytes, little-endian.
func (r *varints) float(what string) float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail(what)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

// count reads a number of elements, at most limit and at most the bytes
// left divided by the bytes each element takes at least.
func (r *varints) count(what string, limit uint64, minBytes int) int {
	n := r.uvarint(what)
	if r.err == nil && (n > limit || n > uint64(len(r.b)/minBytes)) {
		r.fail(what)
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}
