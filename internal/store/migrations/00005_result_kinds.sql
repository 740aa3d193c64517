-- Results of every kind (model.ResultKinds): the page's assembled
-- results ("page", every row before this migration) and the server's own
-- record of each test it served ("tcp", "ndt7", "udp", "mbm"). Each kind
-- keeps its own last N; the index finds a kind's newest rows.

-- +goose Up
ALTER TABLE results ADD COLUMN kind TEXT NOT NULL DEFAULT 'page';
CREATE INDEX results_by_kind ON results (kind, seq);

-- +goose Down
DROP INDEX results_by_kind;
ALTER TABLE results DROP COLUMN kind;
