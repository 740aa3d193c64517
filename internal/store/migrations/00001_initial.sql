-- The store's schema, written once for both engines. Words in braces are
-- expanded per dialect (migrate.go): {{BLOB}}, {{DOUBLE}}, {{ID}} (an
-- auto-increment primary key) and {{COMPACT}} (WITHOUT ROWID on SQLite:
-- a table whose primary key is the row, half the size of a rowid table
-- plus an index). Times are Unix nanoseconds, durations nanoseconds.

-- +goose Up

-- Results of assembled tests (the page's and the CLI's): the old
-- internal/history table, unchanged, so its files open as stores.
CREATE TABLE IF NOT EXISTS results (
	seq           {{ID}},
	id            TEXT NOT NULL UNIQUE,
	start         TEXT NOT NULL,
	software      TEXT NOT NULL,
	download_bps  {{DOUBLE}} NOT NULL,
	upload_bps    {{DOUBLE}} NOT NULL,
	idle_rtt_ms   {{DOUBLE}} NOT NULL,
	loaded_rtt_ms {{DOUBLE}} NOT NULL,
	errors        BIGINT NOT NULL,
	json          {{BLOB}} NOT NULL
);

-- A monitor's identity; the fleet store tells monitors apart by name.
CREATE TABLE monitors (
	id         {{ID}},
	name       TEXT NOT NULL UNIQUE,
	labels     TEXT NOT NULL,
	created_ns BIGINT NOT NULL
);

-- A probe stream (target × kind × DSCP) of one monitor.
CREATE TABLE streams (
	id         {{ID}},
	monitor_id BIGINT NOT NULL,
	name       TEXT NOT NULL,
	target     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	dscp       INTEGER NOT NULL,
	UNIQUE (monitor_id, name)
);

-- One row per probe, kept small: flags bit 0 lost, bit 1 late.
CREATE TABLE probes (
	sid         BIGINT NOT NULL,
	sent_ns     BIGINT NOT NULL,
	seq         BIGINT NOT NULL,
	lateness_ns BIGINT NOT NULL,
	rtt_ns      BIGINT NOT NULL,
	fwd_ns      BIGINT NOT NULL,
	rev_ns      BIGINT NOT NULL,
	flags       SMALLINT NOT NULL,
	load        SMALLINT NOT NULL,
	PRIMARY KEY (sid, sent_ns)
) {{COMPACT}};

-- Interface byte counters, monotonic (the reader unwraps them).
CREATE TABLE counters (
	monitor_id BIGINT NOT NULL,
	time_ns    BIGINT NOT NULL,
	rx_bytes   BIGINT NOT NULL,
	tx_bytes   BIGINT NOT NULL,
	PRIMARY KEY (monitor_id, time_ns)
) {{COMPACT}};

-- One stream's minute. The columns are what any query filters or sums;
-- data holds the rest (histogram bins, counts within thresholds per load
-- state) in the analysis package's own encoding.
CREATE TABLE rollups (
	sid       BIGINT NOT NULL,
	minute_ns BIGINT NOT NULL,
	sent      BIGINT NOT NULL,
	lost      BIGINT NOT NULL,
	late      BIGINT NOT NULL,
	sum_ns    {{DOUBLE}} NOT NULL,
	sum_sq_ns {{DOUBLE}} NOT NULL,
	min_ns    BIGINT NOT NULL,
	max_ns    BIGINT NOT NULL,
	data      {{BLOB}} NOT NULL,
	PRIMARY KEY (sid, minute_ns)
) {{COMPACT}};

-- Events: stream_id is a streams.id, or -1 for the link.
CREATE TABLE events (
	id         {{ID}},
	monitor_id BIGINT NOT NULL,
	kind       TEXT NOT NULL,
	start_ns   BIGINT NOT NULL,
	end_ns     BIGINT NOT NULL,
	stream_id  BIGINT NOT NULL,
	text       TEXT NOT NULL,
	detail     TEXT NOT NULL,
	flags      TEXT NOT NULL
);
CREATE INDEX events_by_time ON events (monitor_id, start_ns);

-- Each start of a monitor: when, and the last sample stored before it.
CREATE TABLE restarts (
	monitor_id   BIGINT NOT NULL,
	time_ns      BIGINT NOT NULL,
	last_ns      BIGINT NOT NULL,
	version      TEXT NOT NULL,
	PRIMARY KEY (monitor_id, time_ns)
) {{COMPACT}};

-- +goose Down
DROP TABLE restarts;
DROP INDEX events_by_time;
DROP TABLE events;
DROP TABLE rollups;
DROP TABLE counters;
DROP TABLE probes;
DROP TABLE streams;
DROP TABLE monitors;
DROP TABLE results;
