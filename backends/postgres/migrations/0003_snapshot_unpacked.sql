-- What a snapshot holds unpacked, recorded at create so a restore stops as soon as an object
-- expands past it (a decompression bomb). -1: unknown, for snapshots recorded before.
ALTER TABLE snapshots ADD COLUMN unpacked_bytes bigint NOT NULL DEFAULT -1;
