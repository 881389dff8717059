-- Done rows leave the state index (issue 11). Most rows of a projection
-- table are done, and the batch apply inserts them done: with version 1
-- every applied event added an entry to (projection, state, updated_at),
-- a tenth of the apply's database time. The failed-row sweep, dead-row
-- lists and replays read unfinished rows only, so the index keeps those;
-- retention of old done rows finds them through a BRIN index on
-- updated_at instead (a few bytes per range of pages, not an entry per
-- row: done rows are written in time order, so ranges stay narrow).
-- Status counts scan the projection's rows either way.
-- Locking: CREATE INDEX holds a SHARE lock (writes wait, reads go on)
-- while it reads the table, and DROP INDEX an ACCESS EXCLUSIVE lock for a
-- moment. On a large table create the two indexes first by hand with
-- CREATE INDEX CONCURRENTLY (same names and definitions); the IF NOT
-- EXISTS below then skips them and the migration only drops the old index.
CREATE INDEX IF NOT EXISTS "{{table}}_open_state" ON "{{table}}" (projection, state, updated_at)
  WHERE state <> 'done';
CREATE INDEX IF NOT EXISTS "{{table}}_done_age" ON "{{table}}" USING brin (updated_at)
  WITH (autosummarize = on);
DROP INDEX IF EXISTS "{{table}}_state";
