-- Keep-alive (issue 35): the idle sweep leaves a project alone until keep_alive_until. The
-- default is the store's zero time (no keep-alive).
ALTER TABLE projects ADD COLUMN keep_alive_until timestamptz NOT NULL DEFAULT '0001-01-01 00:00:00+00';
