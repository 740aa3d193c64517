package fleet

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/store"
)

// TestSettingsRequest: fleet report's flags, checked into a Request before
// a store is opened; each bad one is one line led by its flag.
func TestSettingsRequest(t *testing.T) {
	to := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	from := to - int64(7*24*time.Hour)
	for _, c := range []struct {
		s        Settings
		from, to int64
		want     string
	}{
		{Settings{Labels: []string{"isp"}}, from, to, "--label: "},
		{Settings{ProfilesFile: filepath.Join(t.TempDir(), "none.json")}, from, to, "--profiles "},
		{Settings{MinGiven: true}, from, to, "--upstream-min and --upstream-share must be positive"},
		{Settings{ShareGiven: true, UpstreamMin: 3}, from, to, "--upstream-min and --upstream-share must be positive"},
		{Settings{UpstreamMin: 1}, from, to, "upstream minimum of 1 monitors: want 2 to "},
		{Settings{UpstreamShare: 1.5}, from, to, "upstream share 1.5: want a fraction in (0, 1]"},
		{Settings{}, to, from, "the range ends"},
	} {
		if _, err := c.s.Request(c.from, c.to); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
	req, err := Settings{Labels: []string{"isp=acme"}, UpstreamMin: 5}.Request(from, to)
	if err != nil || req.FromNs != from || req.ToNs != to || req.UpstreamMin != 5 || req.Profiles != nil {
		t.Errorf("%+v, %v", req, err)
	}
}

// TestAggregateWithin: an empty store has nothing to merge; a store that
// is not there is not made.
func TestAggregateWithin(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.db")
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	loc, _ := store.ParseURL(path)
	if n, err := AggregateWithin(context.Background(), loc, 0, time.Minute); err != nil || n != 0 {
		t.Errorf("empty store: %d, %v", n, err)
	}
	none, _ := store.ParseURL(filepath.Join(dir, "none.db"))
	if _, err := AggregateWithin(context.Background(), none, 0, time.Minute); err == nil {
		t.Error("a missing store was aggregated")
	}
}
