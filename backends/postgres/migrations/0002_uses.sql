-- Shared uses of a project (file operations, exec) that exclusive operations wait out or stop
-- (DESIGN.md invariant 9). A row lives only while its use runs.
CREATE TABLE project_uses (
	id         text COLLATE "C" NOT NULL PRIMARY KEY,
	project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	kind       text        NOT NULL,
	owner      text        NOT NULL,
	started_at timestamptz NOT NULL,
	heartbeat  timestamptz NOT NULL,
	revoked    text        NOT NULL DEFAULT ''
);

CREATE INDEX project_uses_project ON project_uses (project_id, started_at);
