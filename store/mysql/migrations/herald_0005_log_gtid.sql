-- Log lanes on MariaDB keep their position as a GTID position too
-- (docs/loglanes.md, "Failover"): gtid_pos is the server's GTID state just
-- after the recorded file and offset, and server_id the @@server_id of the
-- server whose binary log the file and offset belong to. After a failover
-- to a replica (another server id) the lane resumes from gtid_pos, which
-- is valid on every server of the replication topology; the file and
-- offset mean nothing there. Both are written with the position, fenced by
-- the lease, in the same statement. A lane recorded before this version
-- has server_id 0 and an empty gtid_pos until its next position write.
ALTER TABLE herald_log_lanes
  ADD COLUMN server_id BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN gtid_pos VARCHAR(4096) NOT NULL DEFAULT ''
