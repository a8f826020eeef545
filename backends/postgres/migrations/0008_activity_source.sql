-- Which door the newest activity came through and who used it (issue 35), kept beside
-- last_activity and moved with it, so a project can say why it is awake.
ALTER TABLE projects ADD COLUMN last_activity_source text NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN last_activity_actor text NOT NULL DEFAULT '';
