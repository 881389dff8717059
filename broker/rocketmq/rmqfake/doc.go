// Package rmqfake is an in-process RocketMQ name server and broker for
// tests, the way franz-go's kfake serves Kafka: both listen on loopback
// (port 0 picks a free port), speak RocketMQ's remoting protocol, and keep
// messages in memory.
//
// # Wire format
//
// A frame is a 4-byte big-endian total length (everything after it), a
// 4-byte header length whose high byte is the serialization type (0 =
// JSON, the only one served; 1 = RocketMQ binary is refused), the JSON
// header {code, language, version, opaque, flag, remark, extFields} and the
// body. Bit 0 of flag marks a response; a response carries the request's
// opaque. This is the format rocketmq-client-go v2 writes and reads
// (internal/remote/codec.go). client_test.go runs the official client
// against the fake and checks what the fake read from the client's own
// frames, one check per request code (the codes the Go client never sends
// replay its frames of the same header, or, for UNREGISTER_CLIENT, are
// built byte by byte); golden_test.go checks the route answer byte by
// byte; the rocketmq package drives the client end to end.
//
// # Served request codes
//
//   - name server: GET_ROUTEINFO_BY_TOPIC (105). Topics are created on
//     first lookup with Options.Queues queues (autoCreateTopicEnable).
//   - broker: SEND_MESSAGE (10) and SEND_MESSAGE_V2 (310) with properties,
//     tags, keys and the client's queue choice; HEART_BEAT (34), which
//     records consumer groups; UNREGISTER_CLIENT (35). The send response
//     carries msgId (the offset message id: store host and commit-log
//     offset, 32 hex digits), queueId and queueOffset.
//   - consumers: PULL_MESSAGE (11) with long polling (held up to
//     Options.MaxLongPoll while the queue has nothing new), tag filtering
//     ("*" or "a || b") and the commit offset a pull carries; messages in
//     the store format the client decodes (encode.go);
//     QUERY_CONSUMER_OFFSET (14, QUERY_NOT_FOUND when none) and
//     UPDATE_CONSUMER_OFFSET (15); SEARCH_OFFSET_BY_TIMESTAMP (29, answers
//     0), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31);
//     GET_CONSUMER_LIST_BY_GROUP (38) from heartbeats. A group member
//     belongs to the connection its heartbeats came by: when that
//     connection closes (a killed process) the member is forgotten. A
//     member joining makes the broker send NOTIFY_CONSUMER_IDS_CHANGED
//     (40, one-way) to the group's other members, which rebalance at
//     once; one leaving does not (the official client races a notice's
//     rebalance with its own Shutdown), so the rest rebalance at their
//     next 20s round.
//
// Every other code is answered REQUEST_CODE_NOT_SUPPORTED (3). Not served:
// batch sends, CONSUMER_SEND_MSG_BACK (36: retry topics, so a consumer
// that fails a message falls back to resending it itself), transactions,
// ordered-consumption queue locks (LOCK/UNLOCK_BATCH_MQ), ACL signatures
// (ignored, never checked), SQL92 filters, the binary header
// serialization and the v5 gRPC proxy. One broker, no slaves: the slave
// and flush codes exist only as injected faults.
//
// # Tests
//
// Consumers lists a group's members. Messages returns what a topic holds
// (queue, offset, msg id, tags, keys, properties, decompressed body).
// Faults: FailSends answers the next sends
// with a response code (SYSTEM_BUSY, FLUSH_DISK_TIMEOUT,
// SLAVE_NOT_AVAILABLE, ...), DropSends closes the connection instead of
// answering, Stall holds sends until released. Stop and Start close and
// reopen both listeners on the same ports with the same messages, for
// outage tests.
package rmqfake
