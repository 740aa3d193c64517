package fleet

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sonde-project/sonde/internal/store"
)

// Bounds on a label filter (flags supply it).
const (
	MaxFilterTerms = 32
)

// Filter chooses monitors by their labels: every key given must match,
// and a key given more than once matches any of its values
// (isp=a, isp=b, region=north: ISP a or b, in the north).
type Filter struct {
	terms map[string][]string
}

// ParseFilter reads --label terms, each KEY=VALUE: a key of 1 to 256
// printable bytes without '=', a value of 0 to 256 printable bytes; at
// most 32 terms. Each error is one line naming the term.
func ParseFilter(terms []string) (Filter, error) {
	if len(terms) > MaxFilterTerms {
		return Filter{}, fmt.Errorf("%d label terms: at most %d", len(terms), MaxFilterTerms)
	}
	f := Filter{terms: map[string][]string{}}
	for _, t := range terms {
		if len(t) > 2*store.MaxLabelLen+1 {
			return Filter{}, fmt.Errorf("label term %.40q…: longer than %d bytes", t, 2*store.MaxLabelLen+1)
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			return Filter{}, fmt.Errorf("label term %q: want KEY=VALUE (e.g. isp=acme)", t)
		}
		if k == "" || len(k) > store.MaxLabelLen || len(v) > store.MaxLabelLen {
			return Filter{}, fmt.Errorf("label term %q: want a key of 1 to %d bytes and a value of at most %d", t, store.MaxLabelLen, store.MaxLabelLen)
		}
		if !printable(k) || !printable(v) {
			return Filter{}, fmt.Errorf("label term %q: want printable UTF-8", t)
		}
		if !slices.Contains(f.terms[k], v) {
			f.terms[k] = append(f.terms[k], v)
		}
	}
	return f, nil
}

func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// Match tells whether labels pass the filter (the empty filter passes all).
func (f Filter) Match(labels map[string]string) bool {
	for k, vs := range f.terms {
		v, ok := labels[k]
		if !ok || !slices.Contains(vs, v) {
			return false
		}
	}
	return true
}

// Empty tells whether the filter passes every monitor.
func (f Filter) Empty() bool { return len(f.terms) == 0 }

// String is the filter in a canonical form: keys sorted, values in the
// order given, "key=a|b, region=north".
func (f Filter) String() string {
	keys := make([]string, 0, len(f.terms))
	for k := range f.terms {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strings.Join(f.terms[k], "|")
	}
	return strings.Join(parts, ", ")
}
