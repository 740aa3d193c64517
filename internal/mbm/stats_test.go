package mbm

import "testing"

func TestLeastWindow(t *testing.T) {
	for _, tc := range []struct {
		bins  []int64
		k     int
		least int64
		ok    bool
	}{
		{[]int64{5, 1, 1, 5, 0, 9}, 2, 2, true}, // 1+1
		{[]int64{5, 1, 1, 5, 0, 9}, 3, 6, true}, // 1+5+0
		{[]int64{3, 3, 3}, 1, 3, true},
		{[]int64{4, 0}, 2, 0, false}, // one window: the whole span
		{nil, 4, 0, false},
		{[]int64{1, 2, 3}, 0, 0, false},
	} {
		least, ok := LeastWindow(tc.bins, tc.k)
		if least != tc.least || ok != tc.ok {
			t.Errorf("LeastWindow(%v, %d) = %d, %v; want %d, %v", tc.bins, tc.k, least, ok, tc.least, tc.ok)
		}
	}
}
