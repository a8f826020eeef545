-- A project's history (issue 35): activity coalesced into one line per source per quiet spell,
-- and the sweep's idle warnings, so "why is this project awake / why was it hibernated" is
-- answered by reading it. Operations stay in the journal (operations). Bounded per project by
-- the store (engine.MaxHistory).
CREATE TABLE project_history (
	id         INTEGER PRIMARY KEY,
	project_id TEXT    NOT NULL REFERENCES projects (id),
	kind       TEXT    NOT NULL,
	source     TEXT    NOT NULL DEFAULT '',
	actor      TEXT    NOT NULL DEFAULT '',
	first_at   INTEGER NOT NULL,
	last_at    INTEGER NOT NULL,
	touches    INTEGER NOT NULL DEFAULT 1
) STRICT;

CREATE INDEX project_history_project ON project_history (project_id, id);
