package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sonde-project/sonde/internal/model"
)

// The journal's small state, rewritten whole (write a temporary file,
// fsync it, rename it over meta.json, fsync the directory): a crash
// leaves the old file or the new one, never a mix.
const (
	metaFile    = "meta.json"
	metaVersion = 1
	// maxMetaBytes bounds the file read at open (it holds monitors,
	// streams, capacities and marks: kilobytes).
	maxMetaBytes = 8 << 20
	// maxCapacityRows bounds the capacity rows kept per journal (one per
	// start or change); the oldest go first.
	maxCapacityRows = 10_000
	maxShipMarks    = 1024
)

type jmeta struct {
	Version    int         `json:"version"`
	InstanceID string      `json:"instance_id,omitempty"`
	Monitors   []jmonitor  `json:"monitors"`
	Streams    []jstream   `json:"streams"`
	Capacities []jcapacity `json:"capacities"`
	ShipMarks  []jmark     `json:"ship_marks"`
	Floors     jfloors     `json:"floors"`
	NextEvent  int64       `json:"next_event_id"`
}

type jmonitor struct {
	ID     int64             `json:"id"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

type jstream struct {
	ID      int32 `json:"id"`
	Monitor int64 `json:"monitor"`
	model.MonitorStream
}

type jcapacity struct {
	Monitor int64 `json:"monitor"`
	CapacityRow
}

type jmark struct {
	Dest    string `json:"dest"`
	Monitor int64  `json:"monitor"`
	Table   Table  `json:"table"`
	Mark    int64  `json:"mark"`
}

// jfloors is what retention deleted: rows older than a floor are gone
// (reads skip them; a segment wholly below is removed). An event is gone
// when it ended before EventsEnd and its ID is at most EventsID.
type jfloors struct {
	Probes    int64 `json:"probes"`
	Counters  int64 `json:"counters"`
	Rollups   int64 `json:"rollups"`
	Restarts  int64 `json:"restarts"`
	EventsEnd int64 `json:"events_end"`
	EventsID  int64 `json:"events_id"`
}

func readMeta(dir string) (jmeta, error) {
	m := jmeta{Version: metaVersion, NextEvent: 1, Floors: jfloors{noFloor, noFloor, noFloor, noFloor, noFloor, noFloor}}
	f, err := os.Open(filepath.Join(dir, metaFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("store: journal %s: %w", dir, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMetaBytes+1))
	if err != nil {
		return m, fmt.Errorf("store: journal %s: %w", dir, err)
	}
	if len(b) > maxMetaBytes {
		return m, fmt.Errorf("store: journal %s: %s over %d bytes", dir, metaFile, maxMetaBytes)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("store: journal %s: %s: %s", dir, metaFile, oneLine(err))
	}
	if m.Version != metaVersion {
		return m, fmt.Errorf("%w: journal %s is of format %d, this sonde reads %d", ErrNewerSchema, dir, m.Version, metaVersion)
	}
	return m, nil
}

// writeMeta replaces the directory's meta.json with m.
func writeMeta(dir string, m *jmeta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("store: journal state: %w", err)
	}
	tmp := filepath.Join(dir, metaFile+".tmp")
	if err := writeSynced(tmp, b); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, metaFile)); err != nil {
		return fmt.Errorf("store: journal state: %w", err)
	}
	return syncDir(dir)
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("store: journal state: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: journal state %s: %w", path, err)
	}
	return nil
}

// syncDir makes a rename or a new file in dir durable. Not every system
// can fsync a directory (Windows): there it is skipped.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: journal %s: %w", dir, err)
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}
