-- A project's history (issue 35): activity coalesced into one line per source per quiet spell,
-- and the sweep's idle warnings, so "why is this project awake / why was it hibernated" is
-- answered by reading it. Operations stay in the journal (operations). Bounded per project by
-- the store (engine.MaxHistory).
CREATE TABLE project_history (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	project_id text COLLATE "C" NOT NULL REFERENCES projects (id),
	kind       text        NOT NULL,
	source     text        NOT NULL DEFAULT '',
	actor      text        NOT NULL DEFAULT '',
	first_at   timestamptz NOT NULL,
	last_at    timestamptz NOT NULL,
	touches    integer     NOT NULL DEFAULT 1
);

CREATE INDEX project_history_project ON project_history (project_id, id);
