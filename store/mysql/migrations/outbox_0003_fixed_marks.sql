-- Marks that rewrite a row in place (issue 11). InnoDB updates a record in
-- place only when no column changes its stored size; otherwise it deletes
-- and reinserts the record, and on a full page (a queue's pages are full:
-- rows arrive in id order) that means reorganizing or splitting the page.
-- Up to version 2 marking a row delivered set two NULL columns (delivered_at,
-- receipt), growing every row: measured on MariaDB 10.11 with 1 KiB rows,
-- marking 1,000 rows took about 3.5 times as long as the same mark without
-- them. Version 3 keeps what readers see and stores it so that the mark
-- grows nothing:
--
-- * receipt_padded (the old receipt column, renamed) defaults to 64 spaces,
--   and a mark writes the receipt padded with spaces to 64 bytes, the same
--   size (receipts longer than that are stored as they are). receipt is now
--   a virtual column: receipt_padded without the padding, NULL while blank.
-- * delivered_at is now a virtual column: a delivered row's available_at,
--   which the mark sets to the same time, so the mark no longer writes it.
--   delivered_at_stored (the old column, renamed) keeps the times of rows
--   delivered before the upgrade, which take precedence; a replay clears it.
--
-- Readers, and INSERTs that list their columns (docs/sql.md), are
-- unchanged. Rows written before the upgrade keep their values (their
-- receipts unpadded); a pending one grows once, at its first mark.
--
-- Locking: each ALTER changes the table's definition only (INSTANT): no
-- row is read or written, and each holds the table's exclusive metadata
-- lock for a moment (it waits behind transactions open on the table, and
-- new statements wait behind it while it does). Relays of an older build
-- write receipt and delivered_at, which become computed: stop them before
-- the upgrade (their marks would fail, and the rows they held would be
-- delivered again when their leases run out). Three ALTERs: MariaDB makes
-- neither the default's change nor virtual columns instant together with
-- other changes.
ALTER TABLE `{{table}}`
  RENAME COLUMN receipt TO receipt_padded,
  RENAME COLUMN delivered_at TO delivered_at_stored,
  ALGORITHM=INSTANT;
ALTER TABLE `{{table}}`
  ALTER COLUMN receipt_padded SET DEFAULT (REPEAT(' ', 64)),
  ALGORITHM=INSTANT;
ALTER TABLE `{{table}}`
  ADD COLUMN receipt TEXT AS (NULLIF(RTRIM(receipt_padded), '')) VIRTUAL,
  ADD COLUMN delivered_at DATETIME(6) AS (IF(status = 'delivered', COALESCE(delivered_at_stored, available_at), NULL)) VIRTUAL,
  ALGORITHM=INSTANT;
