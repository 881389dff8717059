-- Version 4: ordered_claim only while an ordered lane reads the table.
-- Every insert of a pending row wrote an entry in it, and on a table read
-- through the log (a log lane) every such entry is one more WAL record
-- that the lane's walsender decodes. Without it, INSERTs of 1,000 rows per
-- transaction ran about 6 % faster on a 2-core machine (docs/benchmarks.md
-- has the log-lane drains, where the gain was within the noise).
-- MigrateFor keeps it for ordered lanes and adds it back when one is
-- configured (docs/sql.md, "ordered_claim by lane").
DROP INDEX IF EXISTS "{{table}}_ordered_claim";
