package report

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// zeroOf is a kind's zero result as sonde writes it (every field it
// always writes is there), under the schema given.
func zeroOf(t *testing.T, k *kind, schema string) []byte {
	t.Helper()
	v, err := k.decode([]byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(encode(t, v), &m); err != nil {
		t.Fatal(err)
	}
	m["schema"] = schema
	return encode(t, m)
}

// A file whose schema names a kind but whose content is empty or another
// kind's is refused with a reason, for every kind; a complete one of the
// kind is read.
func TestDecodeWrongContent(t *testing.T) {
	for _, k := range kinds {
		if _, err := Decode("f.json", zeroOf(t, k, k.schema)); err != nil {
			t.Errorf("%s: its own (zero) content refused: %v", k.schema, err)
		}
		var ie *InputError
		_, err := Decode("f.json", []byte(`{"schema":"`+k.schema+`"}`))
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "holds no result") {
			t.Errorf("%s with no content: %v, want an InputError saying it holds no result", k.schema, err)
		}
		for _, o := range kinds {
			if o == k {
				continue
			}
			_, err := Decode("f.json", zeroOf(t, o, k.schema))
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "its schema says "+k.schema) {
				t.Errorf("%s content under schema %s: %v, want an InputError", o.schema, k.schema, err)
			}
		}
	}
	// Named when recognisable.
	_, err := Decode("f.json", encode(t, func() map[string]any {
		var m map[string]any
		_ = json.Unmarshal(encode(t, udpFixture(1)), &m)
		m["schema"] = "sonde.result/v1"
		return m
	}()))
	if err == nil || !strings.Contains(err.Error(), "its content is a sonde.udp/v1 result") {
		t.Errorf("a UDP result labelled sonde.result/v1: %v", err)
	}
}
