-- Indexes by the lanes that read them (issue 11). InnoDB has no partial
-- indexes: every index holds an entry per row, and ordered_claim is keyed
-- on whether a row is pending, so every claim moved each claimed row out of
-- it, and every claim and mark computed the virtual columns of tenant_claim
-- and key_order to find their entries unchanged. Most tables are read by
-- plain lanes only, which never read those three. Measured on MariaDB 10.11
-- with 1 KiB rows, by SQL alone: the claim's UPDATE and COMMIT of 1,000 rows
-- took 10 ms with them and 6.6 ms without; drained to NATS at batch 1,000
-- with 2 workers, 0.92 times the minimal relay with them, 1.08 without.
--
-- Version 5 drops those no lane it is told of reads: Migrate drops all
-- three, Store.MigrateFor (and `herald migrate`, for the configured lanes)
-- keeps the ones an ordered lane (ordered_claim, key_order) or a
-- tenant-scoped or fair lane (tenant_claim) reads, and adds them, online,
-- to tables that lack them. A relay refuses to start a lane whose table
-- lacks one, naming it. The virtual columns stay: unindexed, they are
-- computed only when read.
--
-- Locking: dropping a secondary index changes the table's definition only
-- (INPLACE, LOCK=NONE; no row is read or written); each ALTER holds the
-- table's exclusive metadata lock for a moment. A relay of an older build
-- running an ordered or tenant lane on the table fails its claims (they
-- name the dropped index) until the index is back: upgrade such tables with
-- `herald migrate` and a config that lists those lanes (or MigrateFor),
-- which keeps their indexes.
ALTER TABLE `{{table}}` DROP INDEX ordered_claim, ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE `{{table}}` DROP INDEX tenant_claim, ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE `{{table}}` DROP INDEX key_order, ALGORITHM=INPLACE, LOCK=NONE;
