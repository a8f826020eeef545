-- Shared uses of a project (file operations, exec) that exclusive operations wait out or stop
-- (DESIGN.md invariant 9). A row lives only while its use runs.
CREATE TABLE project_uses (
	id         TEXT    NOT NULL PRIMARY KEY,
	project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	kind       TEXT    NOT NULL,
	owner      TEXT    NOT NULL,
	started_at INTEGER NOT NULL,
	heartbeat  INTEGER NOT NULL,
	revoked    TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX project_uses_project ON project_uses (project_id, started_at);
