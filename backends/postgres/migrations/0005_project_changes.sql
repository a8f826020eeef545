-- The console's incremental read (issue 19): every write to a project's row (activity included)
-- stamps it with the id of the writing transaction. Transaction ids are not handed out in
-- commit order, so a reader does not continue after the largest id it saw: it continues from
-- the oldest transaction still running when it read (its snapshot's xmin). Every transaction
-- older than that had ended, so nothing older can appear later; what it re-reads from there on
-- is a few rows at most. Deleted projects keep their row (status 'deleted'): the tombstone a
-- reader needs to drop them.
ALTER TABLE projects ADD COLUMN change_xid bigint NOT NULL DEFAULT 0;
CREATE INDEX projects_change ON projects (change_xid);
CREATE FUNCTION projects_stamp_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.change_xid := pg_current_xact_id()::text::bigint;
	RETURN NEW;
END
$$;
CREATE TRIGGER projects_change BEFORE INSERT OR UPDATE ON projects
	FOR EACH ROW EXECUTE FUNCTION projects_stamp_change();
