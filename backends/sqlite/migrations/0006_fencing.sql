-- Fencing tokens (issue 30): every claim and takeover gives the project the next hold epoch, and
-- the journal entry carries the epoch of the process that writes it now. A holder that was
-- paused and taken over still has the same op id, but not the epoch, and its writes are refused.
ALTER TABLE projects ADD COLUMN op_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
