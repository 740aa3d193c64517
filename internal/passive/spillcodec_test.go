package passive

import (
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
