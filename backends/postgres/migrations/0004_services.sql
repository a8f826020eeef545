-- Service containers and .tesslate/config.json (issue 16): a container's kind ('' = app,
-- 'service', 'external') and the rest of what it is (image, data path, exports, resources,
-- primary) as one JSON object; a snapshot's parts (the service volumes captured with the files).
ALTER TABLE containers ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE containers ADD COLUMN spec TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN parts TEXT NOT NULL DEFAULT '';
