-- Fewer index entries per claim (issue 11). An update that changes an
-- indexed column adds an entry to every index whose WHERE the new row
-- version meets; a claim moves a row to in_flight and so, with version 1's
-- indexes, entered six. Rows of the default tenant and without a partition
-- key (most rows of most tables) need not be in tenant_claim and key_order,
-- and ordered lanes walk ordered_claim for pending rows only (expired leases
-- are found through claim), so the three are narrowed to the rows their
-- queries can want. The queries repeat these WHERE terms (store/postgres
-- claim.go) so that the planner can use the partial indexes.
DROP INDEX IF EXISTS "{{table}}_ordered_claim";
CREATE INDEX IF NOT EXISTS "{{table}}_ordered_claim" ON "{{table}}" (id)
  WHERE status = 'pending';
DROP INDEX IF EXISTS "{{table}}_tenant_claim";
CREATE INDEX IF NOT EXISTS "{{table}}_tenant_claim" ON "{{table}}" (tenant, status, available_at, id)
  WHERE status IN ('pending', 'in_flight') AND tenant <> '';
DROP INDEX IF EXISTS "{{table}}_key_order";
CREATE INDEX IF NOT EXISTS "{{table}}_key_order" ON "{{table}}" (partition_key, tenant, id)
  WHERE status IN ('pending', 'in_flight', 'dead') AND partition_key <> '';
