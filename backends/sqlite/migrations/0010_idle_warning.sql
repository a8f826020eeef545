-- The idle warning (issue 35): when the sweep last warned that the project will be hibernated.
-- A warning counts only while no activity came after it. The default is the store's zero time.
ALTER TABLE projects ADD COLUMN idle_warned_at INTEGER NOT NULL DEFAULT -62135596800000000;
