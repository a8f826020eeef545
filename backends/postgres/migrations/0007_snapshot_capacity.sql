-- What a CSI snapshot's driver reports is the capacity a restore needs (restoreSize), not the
-- data it holds: kept apart so that it is never shown or summed as data. The CSI snapshots
-- recorded before had it in size_bytes.
ALTER TABLE snapshots ADD COLUMN capacity_bytes bigint NOT NULL DEFAULT 0;
UPDATE snapshots SET capacity_bytes = size_bytes, size_bytes = 0 WHERE backend = 'csi';
