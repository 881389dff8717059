package broker

import "maps"

// Previewer is an optional DriverConfig ability: what the broker would be
// sent for m, built by the adapter's own mapping from its entry's
// settings, without connecting (for `herald lane preview`, which so cannot
// drift from what is sent). Without it a preview shows GenericPreview.
// The error is the one the publisher would return for m (a permanent one
// sends the event dead).
type Previewer interface {
	Preview(m Message) (Preview, error)
}

// Preview is one message as a broker would get it.
type Preview struct {
	// Destination is the topic, subject, queue or URL.
	Destination string `json:"destination"`
	// Headers are the message's headers or properties, as the broker's
	// binding names them.
	Headers map[string]string `json:"headers"`
	// Keys are the message keys, where the broker has them (RocketMQ).
	Keys []string `json:"keys,omitempty"`
	// Tag is the message tag, where the broker has one (RocketMQ).
	Tag string `json:"tag,omitempty"`
	// PartitionKey is what the broker partitions or orders by.
	PartitionKey string `json:"partition_key,omitempty"`
	// Body is the message body.
	Body []byte `json:"-"`
}

// GenericPreview is m with the CloudEvents attributes as headers under
// the binary binding's "ce-" prefix, for brokers without a Previewer: the
// destination, partition key and body they send, with headers their
// binding may spell differently.
func GenericPreview(m Message) Preview {
	return Preview{Destination: m.Destination, Headers: maps.Clone(Headers(m, "ce-", "")),
		PartitionKey: m.Event.PartitionKey, Body: m.Event.Payload}
}
