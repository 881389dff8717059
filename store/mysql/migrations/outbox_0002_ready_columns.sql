-- Fewer index writes per claim and mark (issue 11). InnoDB has no partial
-- indexes, and an update rewrites every secondary index entry whose columns
-- change: with version 1 a claim (status, available_at) and a mark (status,
-- available_at again) each rewrote four entries per row. Version 2 keys
-- tenant_claim, ordered_claim and key_order on virtual columns that are
-- NULL for the rows their queries never want, so those rows' entries stay
-- put: tenant_claim holds status and due time only for rows of a named
-- tenant, ordered_claim only for pending rows, key_order status only for
-- rows with a partition key. A default-tenant row without a key now
-- rewrites the claim index on claim and on mark and ordered_claim on claim
-- only: three entries per delivery, not eight. Queries name the virtual
-- columns (store/mysql claim.go). Virtual columns are computed, not stored:
-- no row is rewritten, and INSERTs that list their columns (docs/sql.md)
-- are unchanged.
--
-- Locking: the first ALTER only changes the table's definition (INSTANT);
-- the second builds the three indexes online (INPLACE, LOCK=NONE): inserts,
-- claims and marks go on while it reads the table, and each ALTER holds an
-- exclusive metadata lock only for a moment at its start and end (it waits
-- behind transactions open on the table, and new statements wait behind it
-- while it does). MariaDB will not add virtual columns and indexes in one
-- online ALTER, hence two.
ALTER TABLE `{{table}}`
  ADD COLUMN tenant_status VARCHAR(16) AS (IF(tenant = '', NULL, status)) VIRTUAL,
  ADD COLUMN tenant_available_at DATETIME(6) AS (IF(tenant = '', NULL, available_at)) VIRTUAL,
  ADD COLUMN ordered_pending TINYINT AS (IF(status = 'pending', 1, NULL)) VIRTUAL,
  ADD COLUMN ordered_available_at DATETIME(6) AS (IF(status = 'pending', available_at, NULL)) VIRTUAL,
  ADD COLUMN key_status VARCHAR(16) AS (IF(partition_key = '', NULL, status)) VIRTUAL,
  ALGORITHM=INSTANT;
ALTER TABLE `{{table}}`
  DROP INDEX tenant_claim,
  ADD INDEX tenant_claim (tenant, tenant_status, tenant_available_at, id),
  DROP INDEX ordered_claim,
  ADD INDEX ordered_claim (ordered_pending, id, ordered_available_at),
  DROP INDEX key_order,
  ADD INDEX key_order (partition_key, tenant, key_status, id),
  ALGORITHM=INPLACE, LOCK=NONE;
