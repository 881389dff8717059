-- Each journaled batch of a log lane names the table it was read from by
-- relation id as well as by name (docs/loglanes.md, "Faults"): a table
-- dropped and made again under the same name numbers its rows from 1
-- again, so a batch journaled for the dropped table must not mark the new
-- table's rows. 0 is a batch journaled before this version; it applies to
-- the table of its name, as it did.
ALTER TABLE herald_log_marks ADD COLUMN IF NOT EXISTS table_id BIGINT NOT NULL DEFAULT 0;
