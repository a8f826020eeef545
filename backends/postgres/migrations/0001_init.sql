-- The same schema as the SQLite store, so both pass one contract suite. Times are timestamptz
-- (microseconds); the zero time.Time is stored as itself (0001-01-01 UTC) so every column stays
-- NOT NULL and orders the way it does in SQLite. Identifiers use the "C" collation: ordering by
-- id, slug or name is byte order, as in SQLite, whatever the database's default locale.

CREATE TABLE projects (
	id                   text COLLATE "C" NOT NULL PRIMARY KEY,
	slug                 text COLLATE "C" NOT NULL,
	name                 text        NOT NULL DEFAULT '',
	owner                text        NOT NULL DEFAULT '',
	status               text        NOT NULL,
	status_reason        text        NOT NULL DEFAULT '',
	last_activity        timestamptz NOT NULL,
	created_at           timestamptz NOT NULL,
	updated_at           timestamptz NOT NULL,
	hibernation_snapshot text        NOT NULL DEFAULT '',
	op_id                text        NOT NULL DEFAULT '',
	op_kind              text        NOT NULL DEFAULT '',
	op_owner             text        NOT NULL DEFAULT '',
	op_heartbeat         timestamptz NOT NULL
);

-- A slug names one live project; deleted projects keep theirs so history stays readable.
CREATE UNIQUE INDEX projects_live_slug ON projects (slug) WHERE status <> 'deleted';
-- Lookups by slug also find deleted projects, which the partial index does not cover.
CREATE INDEX projects_slug ON projects (slug);
-- The hibernation sweep reads exactly this slice in this order, so LIMIT stops early with no sort.
CREATE INDEX projects_idle ON projects (last_activity, id) WHERE status = 'active' AND op_id = '';
-- The stale-holder sweep.
CREATE INDEX projects_held ON projects (op_heartbeat, id) WHERE op_id <> '';
CREATE INDEX projects_owner ON projects (owner);

CREATE TABLE containers (
	project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	name       text COLLATE "C" NOT NULL,
	directory  text        NOT NULL DEFAULT '',
	port       integer     NOT NULL DEFAULT 0,
	command    text        NOT NULL DEFAULT '',
	-- JSON text, '' when empty: as in SQLite (jsonb would refuse values SQLite keeps, such as \u0000).
	env        text        NOT NULL DEFAULT '',
	git_url    text        NOT NULL DEFAULT '',
	git_branch text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	PRIMARY KEY (project_id, name)
);

CREATE TABLE connections (
	project_id text COLLATE "C" NOT NULL,
	from_name  text COLLATE "C" NOT NULL,
	to_name    text COLLATE "C" NOT NULL,
	PRIMARY KEY (project_id, from_name, to_name),
	FOREIGN KEY (project_id, from_name) REFERENCES containers (project_id, name) ON DELETE CASCADE,
	FOREIGN KEY (project_id, to_name) REFERENCES containers (project_id, name) ON DELETE CASCADE
);

-- The primary key covers (project_id, from_name); deleting a container also searches by to_name.
CREATE INDEX connections_to ON connections (project_id, to_name);

CREATE TABLE snapshots (
	id         text COLLATE "C" NOT NULL PRIMARY KEY,
	project_id text COLLATE "C" NOT NULL REFERENCES projects (id),
	owner      text        NOT NULL DEFAULT '',
	type       text        NOT NULL,
	label      text        NOT NULL DEFAULT '',
	status     text        NOT NULL,
	created_at timestamptz NOT NULL,
	ready_at   timestamptz NOT NULL,
	deleted_at timestamptz NOT NULL,
	size_bytes bigint      NOT NULL DEFAULT 0,
	sha256     text        NOT NULL DEFAULT '',
	location   text        NOT NULL DEFAULT '',
	backend    text        NOT NULL DEFAULT '',
	error      text        NOT NULL DEFAULT ''
);

-- The timeline and the manual-snapshot count.
CREATE INDEX snapshots_project ON snapshots (project_id, type, status);
-- The retention purge.
CREATE INDEX snapshots_deleted ON snapshots (deleted_at) WHERE status = 'deleted';

CREATE TABLE operations (
	id          text COLLATE "C" NOT NULL PRIMARY KEY,
	project_id  text COLLATE "C" NOT NULL REFERENCES projects (id),
	kind        text        NOT NULL,
	step        text        NOT NULL DEFAULT '',
	state       text        NOT NULL,
	snapshot_id text        NOT NULL DEFAULT '',
	owner       text        NOT NULL DEFAULT '',
	started_at  timestamptz NOT NULL,
	updated_at  timestamptz NOT NULL,
	finished_at timestamptz NOT NULL,
	error       text        NOT NULL DEFAULT '',
	-- Insertion order, SQLite's rowid: breaks ties between operations started at the same time.
	seq         bigint      GENERATED ALWAYS AS IDENTITY
);

CREATE INDEX operations_project ON operations (project_id, started_at, seq);

CREATE TABLE locks (
	name       text COLLATE "C" NOT NULL PRIMARY KEY,
	owner      text        NOT NULL,
	expires_at timestamptz NOT NULL
);
