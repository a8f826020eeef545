-- Times are integer unix microseconds in UTC; the zero time.Time is stored as its own (very
-- negative) microsecond value so every column stays NOT NULL and orders naturally.

CREATE TABLE projects (
	id                   TEXT    NOT NULL PRIMARY KEY,
	slug                 TEXT    NOT NULL,
	name                 TEXT    NOT NULL DEFAULT '',
	owner                TEXT    NOT NULL DEFAULT '',
	status               TEXT    NOT NULL,
	status_reason        TEXT    NOT NULL DEFAULT '',
	last_activity        INTEGER NOT NULL,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL,
	hibernation_snapshot TEXT    NOT NULL DEFAULT '',
	op_id                TEXT    NOT NULL DEFAULT '',
	op_kind              TEXT    NOT NULL DEFAULT '',
	op_owner             TEXT    NOT NULL DEFAULT '',
	op_heartbeat         INTEGER NOT NULL
) STRICT;

-- A slug names one live project; deleted projects keep theirs so history stays readable.
CREATE UNIQUE INDEX projects_live_slug ON projects (slug) WHERE status <> 'deleted';
-- Lookups by slug also find deleted projects, which the partial index does not cover.
CREATE INDEX projects_slug ON projects (slug);
-- The hibernation sweep: active projects ordered by last activity.
CREATE INDEX projects_idle ON projects (status, last_activity);
-- The stale-holder sweep.
CREATE INDEX projects_held ON projects (op_heartbeat) WHERE op_id <> '';
CREATE INDEX projects_owner ON projects (owner);

CREATE TABLE containers (
	project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	name       TEXT    NOT NULL,
	directory  TEXT    NOT NULL DEFAULT '',
	port       INTEGER NOT NULL DEFAULT 0,
	command    TEXT    NOT NULL DEFAULT '',
	env        TEXT    NOT NULL DEFAULT '',
	git_url    TEXT    NOT NULL DEFAULT '',
	git_branch TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	PRIMARY KEY (project_id, name)
) STRICT;

CREATE TABLE connections (
	project_id TEXT NOT NULL,
	from_name  TEXT NOT NULL,
	to_name    TEXT NOT NULL,
	PRIMARY KEY (project_id, from_name, to_name),
	FOREIGN KEY (project_id, from_name) REFERENCES containers (project_id, name) ON DELETE CASCADE,
	FOREIGN KEY (project_id, to_name) REFERENCES containers (project_id, name) ON DELETE CASCADE
) STRICT;

-- The primary key covers (project_id, from_name); deleting a container also searches by to_name.
CREATE INDEX connections_to ON connections (project_id, to_name);

CREATE TABLE snapshots (
	id         TEXT    NOT NULL PRIMARY KEY,
	project_id TEXT    NOT NULL REFERENCES projects (id),
	owner      TEXT    NOT NULL DEFAULT '',
	type       TEXT    NOT NULL,
	label      TEXT    NOT NULL DEFAULT '',
	status     TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	ready_at   INTEGER NOT NULL,
	deleted_at INTEGER NOT NULL,
	size_bytes INTEGER NOT NULL DEFAULT 0,
	sha256     TEXT    NOT NULL DEFAULT '',
	location   TEXT    NOT NULL DEFAULT '',
	backend    TEXT    NOT NULL DEFAULT '',
	error      TEXT    NOT NULL DEFAULT ''
) STRICT;

-- The timeline and the manual-snapshot count.
CREATE INDEX snapshots_project ON snapshots (project_id, type, status);
-- The retention purge.
CREATE INDEX snapshots_deleted ON snapshots (deleted_at) WHERE status = 'deleted';

CREATE TABLE operations (
	id          TEXT    NOT NULL PRIMARY KEY,
	project_id  TEXT    NOT NULL REFERENCES projects (id),
	kind        TEXT    NOT NULL,
	step        TEXT    NOT NULL DEFAULT '',
	state       TEXT    NOT NULL,
	snapshot_id TEXT    NOT NULL DEFAULT '',
	owner       TEXT    NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL,
	error       TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX operations_project ON operations (project_id, started_at);

CREATE TABLE locks (
	name       TEXT    NOT NULL PRIMARY KEY,
	owner      TEXT    NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;
