package fleet

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"

	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

// Settings are a fleet report's question as a user writes it (`fleet
// report`'s flags, named in the errors); Request reads them.
type Settings struct {
	Labels       []string // KEY=VALUE terms (ParseFilter)
	ProfilesFile string   // requirement profiles (reliability.ReadProfilesFile); "": the smart-grid table
	// UpstreamMin and UpstreamShare, 0 for their defaults unless given
	// (MinGiven, ShareGiven), when 0 is an error.
	UpstreamMin          int
	UpstreamShare        float64
	MinGiven, ShareGiven bool
}

// Request is the checked request of s over [fromNs, toNs): every error
// is one line, before any store is opened.
func (s Settings) Request(fromNs, toNs int64) (Request, error) {
	filter, err := ParseFilter(s.Labels)
	if err != nil {
		return Request{}, fmt.Errorf("--label: %w", err)
	}
	req := Request{FromNs: fromNs, ToNs: toNs, Filter: filter, UpstreamMin: s.UpstreamMin, UpstreamShare: s.UpstreamShare}
	if s.ProfilesFile != "" {
		if req.Profiles, err = reliability.ReadProfilesFile(s.ProfilesFile); err != nil {
			return req, fmt.Errorf("--profiles %s: %w", s.ProfilesFile, err)
		}
	}
	if s.MinGiven && s.UpstreamMin == 0 || s.ShareGiven && s.UpstreamShare == 0 {
		return req, fmt.Errorf("--upstream-min and --upstream-share must be positive")
	}
	if err := req.Check(); err != nil {
		return req, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "fleet: "))
	}
	return req, nil
}

// ServeStore is `sonde fleet serve`: the existing store at loc opened,
// the fleet view served on listen (Serve) until ctx ends, its address
// told on log.
func ServeStore(ctx context.Context, loc store.Location, listen string, log io.Writer, assets fs.FS) error {
	st, err := store.OpenExisting(ctx, loc)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	fmt.Fprintf(log, "fleet view of %s on http://%s/\n", loc, ln.Addr())
	return Serve(ctx, ln, st, assets)
}
