package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sonde-project/sonde/internal/model"
)

// The fleet: a shared store that monitors ship their rows to. An operator
// enrolls each monitor (AddMonitor: its name, labels and a token, whose
// SHA-256 alone is kept), may revoke it, and the store takes a shipped
// batch (Accept) only from an enrolled, unrevoked monitor with its token,
// from the one instance that first shipped under its name, with times
// near the store's clock (docs/fleet.md, "Shipping").

// ErrRefused is returned by Accept for a batch the store will not take as
// it is (unknown or revoked monitor, wrong token, another instance, a
// clock far off): the error's text says why in one line. The shipper
// keeps the rows and tries again later.
var ErrRefused = errors.New("store: refused")

// ErrMonitorExists is returned by AddMonitor for a name already enrolled.
var ErrMonitorExists = errors.New("store: monitor already enrolled")

// ErrNoMonitor is returned for a monitor name the store does not know.
var ErrNoMonitor = errors.New("store: no such monitor")

// Clock bounds on shipped rows: a row more than MaxAhead after the
// store's clock, or before MinTime (2000-01-01), comes from a clock far
// off and is refused, never shifted.
const (
	MaxAhead = 10 * time.Minute
	MinTime  = int64(946_684_800_000_000_000)
)

// MaxTokenLen bounds a token a monitor presents.
const MaxTokenLen = 256

// Fleet is the operator's side of a shared store.
type Fleet interface {
	// AddMonitor enrolls a monitor and returns its token (printed once:
	// the store keeps its hash); noToken enrolls one that ships without.
	// replace re-enrolls a known name: a new token, not revoked, bound to
	// no instance (a monitor whose machine was replaced).
	AddMonitor(ctx context.Context, id Identity, noToken, replace bool) (token string, err error)
	// RevokeMonitor refuses the monitor's batches from now on.
	RevokeMonitor(ctx context.Context, name string) error
	// FleetMonitors lists every monitor of the store, by name, with its
	// streams.
	FleetMonitors(ctx context.Context) ([]FleetMonitor, error)
	// Accept stores a shipped batch in one transaction, idempotently (a
	// replayed batch inserts nothing twice), or refuses it whole.
	Accept(ctx context.Context, b *Shipment) error
}

// FleetMonitor is one monitor as the fleet store knows it.
type FleetMonitor struct {
	ID       int64             `json:"id"`
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels,omitempty"`
	Enrolled bool              `json:"enrolled"`
	Token    bool              `json:"token"`
	Revoked  bool              `json:"revoked"`
	Instance string            `json:"instance,omitempty"`
	Created  int64             `json:"created_ns"`
	// Streams are its streams by store stream ID (the fleet report's).
	Streams map[int32]model.MonitorStream `json:"-"`
}

// Shipment is one batch a monitor ships: who sends it, the monitor's
// streams (rows' Stream fields index them), and rows of any table.
type Shipment struct {
	Monitor    string
	Token      string
	Instance   string
	Streams    []model.MonitorStream
	Batch      Batch
	Restarts   []RestartRow
	Capacities []CapacityRow
}

// Rows is the number of rows in the shipment.
func (b *Shipment) Rows() int { return b.Batch.Rows() + len(b.Restarts) + len(b.Capacities) }

// NewToken returns a random token (256 bits, URL-safe).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: token: %w", err)
	}
	return "sonde_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// tokenHash is what the store keeps of a token. A token is 256 random
// bits, so a fast hash is enough: no dictionary to try.
func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// checkIdentity bounds a monitor's name and labels.
func checkIdentity(id Identity) error {
	if err := checkName("monitor name", id.Name); err != nil {
		return err
	}
	if len(id.Labels) > MaxLabels {
		return fmt.Errorf("%w: %d labels, the limit is %d", ErrBadInput, len(id.Labels), MaxLabels)
	}
	for k, v := range id.Labels {
		if k == "" || len(k) > MaxLabelLen || len(v) > MaxLabelLen || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("%w: label %.40q: keys 1–%d bytes, values up to %d, UTF-8", ErrBadInput, k, MaxLabelLen, MaxLabelLen)
		}
	}
	return nil
}

// ParseLabels reads labels given as key=value (a flag repeated): keys 1–
// MaxLabelLen printable bytes without '=', values up to MaxLabelLen
// printable bytes, at most MaxLabels, each key once.
func ParseLabels(kvs []string) (map[string]string, error) {
	if len(kvs) > MaxLabels {
		return nil, fmt.Errorf("%d labels, at most %d", len(kvs), MaxLabels)
	}
	out := make(map[string]string, len(kvs))
	printable := func(s string) bool {
		return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
	}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return nil, fmt.Errorf("label %.40q: want key=value", kv)
		case len(k) > MaxLabelLen || len(v) > MaxLabelLen:
			return nil, fmt.Errorf("label %.40q: key and value at most %d bytes each", kv, MaxLabelLen)
		case !printable(k) || !printable(v):
			return nil, fmt.Errorf("label %.40q: want printable UTF-8", kv)
		case strings.TrimSpace(k) != k:
			return nil, fmt.Errorf("label %.40q: the key has spaces around it", kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("label %q given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

func (s *sqlStore) AddMonitor(ctx context.Context, id Identity, noToken, replace bool) (string, error) {
	if err := checkIdentity(id); err != nil {
		return "", err
	}
	token, hash := "", ""
	if !noToken {
		var err error
		if token, err = NewToken(); err != nil {
			return "", err
		}
		hash = tokenHash(token)
	}
	labels, err := json.Marshal(id.Labels)
	if err != nil {
		return "", fmt.Errorf("store: encode labels: %w", err)
	}
	// A name a daemon registered itself (not enrolled) is enrolled in
	// place: its rows stay its own.
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO monitors (name, labels, created_ns, enrolled, token_hash, revoked, instance)
		VALUES (?, ?, ?, 1, ?, 0, '') ON CONFLICT (name) DO UPDATE SET labels = excluded.labels, enrolled = 1,
		token_hash = excluded.token_hash, revoked = 0, instance = '' WHERE monitors.enrolled = 0 OR ?`),
		id.Name, string(labels), time.Now().UnixNano(), hash, replace)
	if err != nil {
		return "", fmt.Errorf("store: enroll monitor %q: %w", id.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return "", fmt.Errorf("%w: %q (--replace issues a new token and unbinds its instance)", ErrMonitorExists, id.Name)
	}
	return token, nil
}

func (s *sqlStore) RevokeMonitor(ctx context.Context, name string) error {
	if err := checkName("monitor name", name); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE monitors SET revoked = 1 WHERE name = ?`), name)
	if err != nil {
		return fmt.Errorf("store: revoke monitor %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", ErrNoMonitor, name)
	}
	return nil
}

func (s *sqlStore) FleetMonitors(ctx context.Context) ([]FleetMonitor, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, name, labels, created_ns, enrolled, token_hash, revoked, instance
		FROM monitors ORDER BY name LIMIT ?`), MaxListLimit)
	if err != nil {
		return nil, fmt.Errorf("store: list monitors: %w", err)
	}
	out := []FleetMonitor{}
	byID := map[int64]int{}
	for rows.Next() {
		var (
			m                 FleetMonitor
			labels, hash      string
			enrolled, revoked int
		)
		if err := rows.Scan(&m.ID, &m.Name, &labels, &m.Created, &enrolled, &hash, &revoked, &m.Instance); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: list monitors: %w", err)
		}
		if err := json.Unmarshal([]byte(labels), &m.Labels); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: monitor %q labels: %w", m.Name, err)
		}
		m.Enrolled, m.Token, m.Revoked = enrolled != 0, hash != "", revoked != 0
		m.Streams = map[int32]model.MonitorStream{}
		byID[m.ID] = len(out)
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list monitors: %w", err)
	}
	srows, err := s.db.QueryContext(ctx, s.q(`SELECT id, monitor_id, name, target, kind, dscp FROM streams ORDER BY id LIMIT ?`), MaxListLimit*4)
	if err != nil {
		return nil, fmt.Errorf("store: list streams: %w", err)
	}
	defer srows.Close()
	for srows.Next() {
		var (
			id, mid int64
			st      model.MonitorStream
			kind    string
		)
		if err := srows.Scan(&id, &mid, &st.Name, &st.Target, &kind, &st.DSCP); err != nil {
			return nil, fmt.Errorf("store: list streams: %w", err)
		}
		st.Kind = model.ProbeKind(kind)
		if i, ok := byID[mid]; ok {
			out[i].Streams[int32(id)] = st
		}
	}
	return out, srows.Err()
}

// shippedStreams registers a shipment's streams, once per monitor and
// list: a shipper sends the same list with every shipment.
func (s *sqlStore) shippedStreams(ctx context.Context, mid int64, streams []model.MonitorStream) ([]int32, error) {
	if len(streams) == 0 {
		return nil, nil
	}
	if len(streams) > MaxStreams {
		return nil, fmt.Errorf("%w: %d streams, the limit is %d", ErrBadInput, len(streams), MaxStreams)
	}
	key, err := json.Marshal(streams)
	if err != nil {
		return nil, fmt.Errorf("store: streams: %w", err)
	}
	s.mu.Lock()
	c, ok := s.shipped[mid]
	s.mu.Unlock()
	if ok && c.key == string(key) {
		return c.sids, nil
	}
	sids, err := s.Streams(ctx, mid, streams)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.shipped) >= maxShippedMonitors {
		clear(s.shipped)
	}
	s.shipped[mid] = shippedList{key: string(key), sids: sids}
	s.mu.Unlock()
	return sids, nil
}

// shippedList is a monitor's stream list as last shipped, and its IDs.
type shippedList struct {
	key  string
	sids []int32
}

// maxShippedMonitors bounds the cache of shipped stream lists.
const maxShippedMonitors = 1024

// refused is an ErrRefused with its reason.
func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// dbNow is the store's clock: PostgreSQL's (the monitor's may be what is
// wrong), SQLite's is this process's.
func (s *sqlStore) dbNow(ctx context.Context) (int64, error) {
	if !havePostgres || s.loc.Backend != Postgres {
		return time.Now().UnixNano(), nil
	}
	var ns int64
	if err := s.db.QueryRowContext(ctx, `SELECT (extract(epoch FROM clock_timestamp()) * 1e9)::bigint`).Scan(&ns); err != nil {
		return 0, fmt.Errorf("store: clock: %w", err)
	}
	return ns, nil
}

// checkClock refuses a shipment with a time far from the store's clock.
func checkClock(b *Shipment, now int64) error {
	check := func(what string, ns int64) error {
		switch {
		case ns > now+int64(MaxAhead):
			return refused("%s at %s is %v ahead of the store's clock (%s): the monitor's clock is off; rows are never shifted",
				what, time.Unix(0, ns).UTC().Format(time.RFC3339), time.Duration(ns-now).Round(time.Second), time.Unix(0, now).UTC().Format(time.RFC3339))
		case ns < MinTime:
			return refused("%s at %s is before 2000: the monitor's clock is off; rows are never shifted", what, time.Unix(0, ns).UTC().Format(time.RFC3339))
		}
		return nil
	}
	var err error
	for _, p := range b.Batch.Probes {
		if err = check("a probe sent", p.SentNs); err != nil {
			return err
		}
	}
	for _, c := range b.Batch.Counters {
		if err = check("a counter sample", c.TimeNs); err != nil {
			return err
		}
	}
	for _, r := range b.Batch.Rollups {
		if err = check("a rollup of the minute", r.MinuteNs); err != nil {
			return err
		}
	}
	for _, e := range b.Batch.Events {
		if err = check("an event starting", e.StartNs); err != nil {
			return err
		}
		if err = check("an event ending", e.EndNs); err != nil {
			return err
		}
	}
	for _, r := range b.Restarts {
		if err = check("a restart", r.TimeNs); err != nil {
			return err
		}
	}
	for _, c := range b.Capacities {
		if err = check("a capacity from", c.FromNs); err != nil {
			return err
		}
	}
	return nil
}

// authorize returns the ID of the shipment's monitor, refusing an
// unknown, unenrolled or revoked one, a wrong token, and an instance other
// than the one bound to the name (binding it on the first shipment).
func (s *sqlStore) authorize(ctx context.Context, b *Shipment) (int64, error) {
	var (
		id                int64
		hash, instance    string
		enrolled, revoked int
	)
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, enrolled, token_hash, revoked, instance FROM monitors WHERE name = ?`), b.Monitor).
		Scan(&id, &enrolled, &hash, &revoked, &instance)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && enrolled == 0):
		return 0, refused("monitor %q is not enrolled in this store (sonde store monitor add %s)", b.Monitor, b.Monitor)
	case err != nil:
		return 0, fmt.Errorf("store: monitor %q: %w", b.Monitor, err)
	case revoked != 0:
		return 0, refused("monitor %q is revoked", b.Monitor)
	case hash != "" && subtle.ConstantTimeCompare([]byte(tokenHash(b.Token)), []byte(hash)) != 1:
		if b.Token == "" {
			return 0, refused("monitor %q needs its token (--ship-token)", b.Monitor)
		}
		return 0, refused("wrong token for monitor %q", b.Monitor)
	}
	if instance == b.Instance {
		return id, nil
	}
	if instance == "" {
		// Bind the name to this instance: of two monitors that start
		// shipping together, one wins.
		if _, err := s.db.ExecContext(ctx, s.q(`UPDATE monitors SET instance = ? WHERE id = ? AND instance = ''`), b.Instance, id); err != nil {
			return 0, fmt.Errorf("store: bind monitor %q: %w", b.Monitor, err)
		}
		if err := s.db.QueryRowContext(ctx, s.q(`SELECT instance FROM monitors WHERE id = ?`), id).Scan(&instance); err != nil {
			return 0, fmt.Errorf("store: monitor %q: %w", b.Monitor, err)
		}
		if instance == b.Instance {
			return id, nil
		}
	}
	return 0, refused("monitor name %q is bound to another instance (%.8s…, this one is %.8s…): two monitors with the same name are refused (sonde store monitor add %s --replace moves the name)",
		b.Monitor, instance, b.Instance, b.Monitor)
}

func (s *sqlStore) Accept(ctx context.Context, b *Shipment) error {
	if err := checkName("monitor name", b.Monitor); err != nil {
		return err
	}
	if len(b.Token) > MaxTokenLen {
		return fmt.Errorf("%w: token of %d bytes, the limit is %d", ErrBadInput, len(b.Token), MaxTokenLen)
	}
	if err := checkName("instance", b.Instance); err != nil {
		return err
	}
	if n := b.Rows(); n > MaxBatchRows {
		return fmt.Errorf("%w: a shipment of %d rows, the limit is %d", ErrBadInput, n, MaxBatchRows)
	}
	if err := checkBatch(&b.Batch); err != nil {
		return err
	}
	for _, r := range b.Restarts {
		if len(r.Version) > MaxNameLen {
			return fmt.Errorf("%w: version of %d bytes", ErrBadInput, len(r.Version))
		}
	}
	for _, c := range b.Capacities {
		if err := checkCapacity(c); err != nil {
			return err
		}
	}
	now, err := s.dbNow(ctx)
	if err != nil {
		return err
	}
	if err := checkClock(b, now); err != nil {
		return err
	}
	mid, err := s.authorize(ctx, b)
	if err != nil {
		return err
	}
	sids, err := s.shippedStreams(ctx, mid, b.Streams)
	if err != nil {
		return err
	}
	return s.writeBatch(ctx, mid, sids, &b.Batch, func(tx *sql.Tx) error {
		for _, r := range b.Restarts {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO restarts (monitor_id, time_ns, last_ns, version) VALUES (?, ?, ?, ?)
				ON CONFLICT DO NOTHING`), mid, r.TimeNs, r.LastNs, r.Version); err != nil {
				return fmt.Errorf("store: insert restart: %w", err)
			}
		}
		for _, c := range b.Capacities {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO capacities (monitor_id, from_ns, up_bps, down_bps, up_source, down_source)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (monitor_id, from_ns) DO UPDATE SET up_bps = excluded.up_bps,
				down_bps = excluded.down_bps, up_source = excluded.up_source, down_source = excluded.down_source`),
				mid, c.FromNs, c.UpBps, c.DownBps, c.UpSource, c.DownSource); err != nil {
				return fmt.Errorf("store: insert capacity: %w", err)
			}
		}
		return nil
	})
}
