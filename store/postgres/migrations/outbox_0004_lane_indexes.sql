-- Version 4: ordered_claim only while an ordered lane reads the table.
-- Every insert of a pending row wrote an entry in it, and on a table read
-- through the log (a log lane) every such entry is one more WAL record
-- that the lane's walsender decodes: dropping it made a log lane's drain
-- of 50,000 events about a fifth faster on a 2-core machine, and plain
-- INSERTs a few percent faster. MigrateFor keeps it for ordered lanes and
-- adds it back when one is configured (docs/sql.md, "Indexes by lane").
DROP INDEX IF EXISTS "{{table}}_ordered_claim";
