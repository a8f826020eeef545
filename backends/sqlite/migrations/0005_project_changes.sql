-- The console's incremental read (issue 19): every write to a project's row (activity included)
-- gives it the next change number, so "what changed since number N" is one index range. Writes
-- are serialised by SQLite's write lock, so numbers are handed out in commit order and a
-- reader that saw number N has seen every change up to N. Deleted projects keep their row
-- (status 'deleted'), which is the tombstone a reader needs to drop them.
ALTER TABLE projects ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
UPDATE projects SET change_seq = rowid;
CREATE INDEX projects_change ON projects (change_seq);
CREATE TRIGGER projects_change_insert AFTER INSERT ON projects BEGIN
	UPDATE projects SET change_seq = (SELECT COALESCE(MAX(change_seq), 0) + 1 FROM projects) WHERE id = NEW.id;
END;
-- The WHEN keeps the trigger's own UPDATE from firing it again.
CREATE TRIGGER projects_change_update AFTER UPDATE ON projects WHEN NEW.change_seq = OLD.change_seq BEGIN
	UPDATE projects SET change_seq = (SELECT MAX(change_seq) + 1 FROM projects) WHERE id = NEW.id;
END;
