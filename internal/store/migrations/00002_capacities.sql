-- The link capacities a monitor used (configured with --up/--down, or
-- learnt from its interface counters), as a history: each row holds from
-- from_ns until the next row of the monitor (or for ever), so a report
-- can give a loaded episode the capacity in effect when it ran, across
-- restarts and changes. A capacity of 0 is unknown; source is
-- "configured", "learnt" or "" (unknown), per direction.

-- +goose Up
CREATE TABLE capacities (
	monitor_id  BIGINT NOT NULL,
	from_ns     BIGINT NOT NULL,
	up_bps      {{DOUBLE}} NOT NULL,
	down_bps    {{DOUBLE}} NOT NULL,
	up_source   TEXT NOT NULL,
	down_source TEXT NOT NULL,
	PRIMARY KEY (monitor_id, from_ns)
) {{COMPACT}};

-- +goose Down
DROP TABLE capacities;
