package rocketmq

import (
	"encoding/json"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"reflect"
	"testing"
	"time"
)

// TestReceiptsTagsKeysThroughClient publishes with the official client to
// rmqfake and checks, per tag mode, what the broker stored against the
// receipt: the receipt's msg id is the stored UNIQ_KEY, its queue and
// offset are where the message sits, the tag follows the mode, the keys are
// the event id then the key headers, the CloudEvents attributes are CE_
// properties, and one key stays on one queue.
func TestReceiptsTagsKeysThroughClient(t *testing.T) {
	for _, mode := range []string{TagConstant, TagEventType} {
		t.Run(mode, func(t *testing.T) {
			c := startFake(t)
			p := newFakePublisher(t, c, Config{TagMode: mode, Tag: "legacy", Body: BodyEnvelope,
				KeyHeaders: []string{"transaction_id", "command_id"}})
			queueOf := map[string]int32{}
			for i := range 12 {
				key := []string{"user-1", "user-2", "user-3"}[i%3]
				m := fakeMessage("receipts", key)
				r := publishOne(t, p, m, 5*time.Second)
				if r.Err != nil {
					t.Fatalf("message %d: %v", i, r.Err)
				}
				if q, ok := queueOf[key]; ok && q != r.Receipt.Partition {
					t.Errorf("key %s on queues %d and %d", key, q, r.Receipt.Partition)
				}
				queueOf[key] = r.Receipt.Partition
				checkStored(t, c.Messages("receipts"), m.Event.ID, r.Receipt.MessageID, int(r.Receipt.Partition),
					r.Receipt.Offset, mode)
			}
		})
	}
}

func checkStored(t *testing.T, stored []rmqMessage, eventID, msgID string, queue int, offset int64, mode string) {
	t.Helper()
	var found *rmqMessage
	for i := range stored {
		if stored[i].UniqKey == msgID {
			found = &stored[i]
		}
	}
	if found == nil {
		t.Fatalf("receipt msg id %s not stored", msgID)
	}
	if found.QueueID != queue || found.QueueOffset != offset {
		t.Errorf("receipt says queue %d offset %d, stored at %d/%d", queue, offset, found.QueueID, found.QueueOffset)
	}
	wantTag := map[string]string{TagConstant: "legacy", TagEventType: "WalletGiftDebited"}[mode]
	if found.Tags != wantTag {
		t.Errorf("tag %q, want %q", found.Tags, wantTag)
	}
	if want := []string{eventID, "tx-1", "cmd-1"}; !reflect.DeepEqual(found.Keys, want) {
		t.Errorf("keys %q, want %q", found.Keys, want)
	}
	p := found.Properties
	if p["CE_id"] != eventID || p["CE_type"] != "WalletGiftDebited" || p["CE_source"] == "" || p["transaction_id"] != "tx-1" {
		t.Errorf("CloudEvents/user properties missing: %v", p)
	}
	var env Envelope
	if err := json.Unmarshal(found.Body, &env); err != nil || env.EventID != eventID {
		t.Errorf("envelope body %s: %v", found.Body, err)
	}
}

type rmqMessage = rmqfake.Message
