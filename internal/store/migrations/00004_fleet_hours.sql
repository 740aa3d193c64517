-- The fleet report's aggregate (docs/fleet.md): one row per stream and
-- hour, merged from that hour's minute rollups by `sonde fleet aggregate`
-- (internal/fleet), so a report over a month of a thousand monitors reads
-- 24 times fewer rows. Columns as in rollups; minutes counts the minute
-- rollups merged; data is the fleet package's own encoding (thresholds
-- and counts within each, the histogram bins, per-load counts).
--
-- rollup_hours_dirty marks the hours whose minute rollups changed since
-- they were merged: Write adds a mark with each minute rollup, the job
-- removes it in the transaction that writes the hour. A report reads
-- minute rollups for marked hours, so it is exact whether or not the job
-- has run.

-- +goose Up
CREATE TABLE rollup_hours (
	sid       BIGINT NOT NULL,
	hour_ns   BIGINT NOT NULL,
	minutes   INTEGER NOT NULL,
	sent      BIGINT NOT NULL,
	lost      BIGINT NOT NULL,
	late      BIGINT NOT NULL,
	sum_ns    {{DOUBLE}} NOT NULL,
	sum_sq_ns {{DOUBLE}} NOT NULL,
	min_ns    BIGINT NOT NULL,
	max_ns    BIGINT NOT NULL,
	data      {{BLOB}} NOT NULL,
	PRIMARY KEY (sid, hour_ns)
) {{COMPACT}};

CREATE TABLE rollup_hours_dirty (
	sid     BIGINT NOT NULL,
	hour_ns BIGINT NOT NULL,
	PRIMARY KEY (sid, hour_ns)
) {{COMPACT}};

-- +goose Down
DROP TABLE rollup_hours_dirty;
DROP TABLE rollup_hours;
