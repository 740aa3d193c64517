package passive

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// fill sets every field reachable from v to a value other than its zero,
// different from field to field (n counts up), and slices to two items.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)) + string(rune('a'+*n/26%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(-*n * 1000003))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n * 7))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.125)
	default:
		panic("fill: " + v.Kind().String())
	}
}

// TestSpillCodecEveryField: every field of a TCP and a QUIC record comes
// back from the spill's encoding as it went in (a field added to a record
// and not to the codec fails here), and so do records of zeros and
// truncated ones fail to decode rather than read past their end.
func TestSpillCodecEveryField(t *testing.T) {
	s := newRecordSpill(t.TempDir())
	n := 0
	var tc model.TCPConn
	fill(reflect.ValueOf(&tc).Elem(), &n)
	var qc model.QUICConn
	fill(reflect.ValueOf(&qc).Elem(), &n)
	check := func(name string, in, out any, enc func(*spillEnc), dec func(*spillDec)) {
		t.Helper()
		var e spillEnc
		enc(&e)
		d := spillDec{b: e.b}
		dec(&d)
		if err := d.err(); err != nil || !reflect.DeepEqual(in, out) {
			t.Errorf("%s: decoded %+v (err %v), want %+v", name, out, err, in)
		}
		for k := range len(e.b) {
			d := spillDec{b: e.b[:k]}
			dec(&d)
			if d.err() == nil {
				t.Fatalf("%s: %d of %d bytes decoded without an error", name, k, len(e.b))
			}
		}
	}
	for _, in := range []model.TCPConn{tc, {}} {
		var out model.TCPConn
		check("TCP", &in, &out, func(e *spillEnc) { encodeTCPRecord(s, e, &in) }, func(d *spillDec) { decodeTCPRecord(s, d, &out) })
	}
	for _, in := range []model.QUICConn{qc, {}} {
		var out model.QUICConn
		check("QUIC", &in, &out, func(e *spillEnc) { encodeQUICRecord(s, e, &in) }, func(d *spillDec) { decodeQUICRecord(s, d, &out) })
	}
}

// FuzzSpillDecode: any bytes decode as a TCP and as a QUIC record without
// a panic and without allocating beyond the input (every count is bounded
// by the bytes left), and what decodes without an error encodes to bytes
// that decode and encode to the same bytes again (floats compared by
// their bits: a NaN is not equal to itself).
func FuzzSpillDecode(f *testing.F) {
	s := newRecordSpill(f.TempDir())
	n := 0
	var tc model.TCPConn
	fill(reflect.ValueOf(&tc).Elem(), &n)
	tc.HTTP, tc.TimeSeq = nil, nil
	var qc model.QUICConn
	fill(reflect.ValueOf(&qc).Elem(), &n)
	var e spillEnc
	encodeTCPRecord(s, &e, &tc)
	f.Add(append([]byte(nil), e.b...))
	e.b = e.b[:0]
	encodeQUICRecord(s, &e, &qc)
	f.Add(append([]byte(nil), e.b...))
	f.Add([]byte{})
	codecs := map[string]func([]byte) ([]byte, bool){
		"TCP":  decodeEncode(s, decodeTCPRecord, encodeTCPRecord),
		"QUIC": decodeEncode(s, decodeQUICRecord, encodeQUICRecord),
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, codec := range codecs {
			e1, ok := codec(b)
			if !ok {
				continue
			}
			if e2, ok := codec(e1); !ok || !bytes.Equal(e1, e2) {
				t.Fatalf("%s: %x decoded and encoded as %x, which gives %x (ok %v)", name, b, e1, e2, ok)
			}
		}
	})
}

// decodeEncode returns a function that decodes bytes as a record, encodes
// it again and says whether it decoded without an error.
func decodeEncode[T any](s *recordSpill, dec func(*recordSpill, *spillDec, *T), enc func(*recordSpill, *spillEnc, *T)) func([]byte) ([]byte, bool) {
	return func(b []byte) ([]byte, bool) {
		var r T
		d := spillDec{b: b}
		dec(s, &d, &r)
		var e spillEnc
		enc(s, &e, &r)
		return e.b, d.err() == nil
	}
}
