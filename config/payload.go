package config

// PayloadLimit is the largest payload lane l accepts at enqueue: the
// smaller of its max_payload and what its broker takes, so that an event
// the broker would refuse is refused before it is committed (the relay
// checks again at publish). A broker tells its limit through
// broker.PayloadLimiter (a NATS server's own max_payload, looked up; a
// RabbitMQ server's version's default max_message_size, looked up unless
// max_payload is set; the max_payload of other brokers' configs); 0 means
// no limit is known
// (stdout), and Herald's default applies.
func (f *File) PayloadLimit(l *Lane) int {
	limit := l.MaxPayload
	if b := f.Brokers[l.Broker]; b != nil {
		if bl := b.payloadLimit(); bl > 0 && (limit == 0 || bl < limit) {
			limit = bl
		}
	}
	return limit
}
