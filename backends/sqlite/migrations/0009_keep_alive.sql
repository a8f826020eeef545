-- Keep-alive (issue 35): the idle sweep leaves a project alone until keep_alive_until. The
-- default is the store's zero time (no keep-alive).
ALTER TABLE projects ADD COLUMN keep_alive_until INTEGER NOT NULL DEFAULT -62135596800000000;
