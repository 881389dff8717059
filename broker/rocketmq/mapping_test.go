package rocketmq

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

// TestMain checks for leaks, minus those the RocketMQ client causes by its
// design: a go-cache janitor started from a package-level variable at
// import (it lives as long as the process), and the client's schedulers and
// the push consumer's statistics, which sleep (time.Sleep, not a select on
// shutdown) before they first look at the done channel, so they outlive
// Shutdown by up to that long; and the push consumer's pulls in flight at
// Shutdown, which the client closes the connection under without failing
// them, so they wait out their 30s timeout (the pull consumer's too), like a rebalance the
// broker's membership notice started, which waits out 3s. A
// crash child (crash_test.go) runs its job instead.
func TestMain(m *testing.M) {
	projectortest.CrashChild(openCrashChild)
	goleak.VerifyTestMain(m, leakIgnores()...)
}

// leakIgnores are the RocketMQ client's own sleepers (see TestMain).
func leakIgnores() []goleak.Option { return testenv.LeakOptions() }

func baseConfig() Config {
	return Config{NameServers: []string{"127.0.0.1:9876"}}.WithDefaults()
}

func testMessage() broker.Message {
	return broker.Message{Destination: "wallet_events", Event: herald.Event{
		ID: "0190-ev", Tenant: "app1", Topic: "wallet", Type: "WalletGiftDebited", PartitionKey: "user-7",
		Headers: map[string]string{
			"transaction_id": "tx-1", "command_id": "cmd-9", "traceparent": "00-abc-def-01",
			"content-type": "application/json",
		},
		Payload:   []byte(`{"gift_id": 3, "count": 2}`),
		CreatedAt: time.Date(2026, 5, 6, 7, 8, 9, 123000000, time.FixedZone("x", 3600)),
	}}
}

func TestMapRawWithEventTypeTag(t *testing.T) {
	cfg := baseConfig()
	cfg.Source = "wallet-svc"
	cfg.KeyHeaders = []string{"transaction_id", "command_id", "missing"}
	got, err := Map(cfg, testMessage())
	if err != nil {
		t.Fatal(err)
	}
	want := Mapped{
		Topic: "wallet_events", Tag: "WalletGiftDebited", ShardingKey: "user-7",
		Keys: []string{"0190-ev", "tx-1", "cmd-9"},
		Properties: map[string]string{
			"CE_specversion": "1.0", "CE_id": "0190-ev", "CE_type": "WalletGiftDebited",
			"CE_source": "wallet-svc", "CE_time": "2026-05-06T06:08:09.123Z", "CE_subject": "user-7",
			"CE_tenant": "app1", "CE_topic": "wallet", "CE_contenttype": "application/json",
			"transaction_id": "tx-1", "command_id": "cmd-9", "traceparent": "00-abc-def-01",
		},
		Body: []byte(`{"gift_id": 3, "count": 2}`),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Map =\n%+v\nwant\n%+v", got, want)
	}
}

func TestMapConstantTagAndEnvelope(t *testing.T) {
	cfg := baseConfig()
	cfg.TagMode, cfg.Tag, cfg.Body = TagConstant, "legacy_outbox", BodyEnvelope
	got, err := Map(cfg, testMessage())
	if err != nil {
		t.Fatal(err)
	}
	if got.Tag != "legacy_outbox" || !reflect.DeepEqual(got.Keys, []string{"0190-ev"}) {
		t.Fatalf("tag %q keys %v", got.Tag, got.Keys)
	}
	want := `{"tenant":"app1","event_id":"0190-ev","event_type":"WalletGiftDebited",` +
		`"occurred_at":"2026-05-06T06:08:09.123Z","payload":{"gift_id":3,"count":2}}`
	if string(got.Body) != want {
		t.Fatalf("envelope =\n%s\nwant\n%s", got.Body, want)
	}
}

// Rule: in tag_mode header the tag is the named header's value (a mapped
// table's column); a message without it, or with a value a tag filter
// cannot match, is refused for good.
func TestMapTagFromHeader(t *testing.T) {
	cfg := baseConfig()
	cfg.TagMode, cfg.TagHeader = TagHeader, "command_id"
	got, err := Map(cfg, testMessage())
	if err != nil || got.Tag != "cmd-9" {
		t.Fatalf("tag %q, error %v; want cmd-9", got.Tag, err)
	}
	for value, want := range map[string]string{"": "header command_id (tag_header) is missing or empty", "a b": "white space"} {
		m := testMessage()
		m.Event.Headers["command_id"] = value
		if _, err := Map(cfg, m); !herald.IsPermanent(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("header %q: error %v; want a permanent one saying %q", value, err, want)
		}
	}
}

func TestEnvelopePayloadForms(t *testing.T) {
	cfg := baseConfig()
	cfg.Body = BodyEnvelope
	cases := []struct {
		payload []byte
		want    string // the envelope's payload field; "" = error
	}{
		{[]byte(`[1,2]`), `[1,2]`},
		{[]byte(`"s"`), `"s"`},
		{[]byte(`plain text`), `"plain text"`},
		{[]byte{}, `""`},
		{[]byte{0xff, 0xfe}, ""},
	}
	for _, c := range cases {
		m := testMessage()
		m.Event.Payload, m.Event.CreatedAt = c.payload, time.Time{}
		got, err := Map(cfg, m)
		if c.want == "" {
			if !herald.IsPermanent(err) {
				t.Errorf("payload %q: want a permanent error, got %v", c.payload, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("payload %q: %v", c.payload, err)
			continue
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal(got.Body, &env); err != nil {
			t.Fatal(err)
		}
		if string(env["payload"]) != c.want {
			t.Errorf("payload %q: envelope payload %s, want %s", c.payload, env["payload"], c.want)
		}
		if _, ok := env["occurred_at"]; ok {
			t.Errorf("zero CreatedAt: occurred_at should be left out: %s", got.Body)
		}
	}
}

func TestMapRefusals(t *testing.T) {
	cfg := baseConfig()
	cfg.MaxPayload = 30
	cases := map[string]func(*broker.Message){
		"topic (destination) is empty": func(m *broker.Message) { m.Destination = "" },
		"system property":              func(m *broker.Message) { m.Event.Headers["KEYS"] = "x" },
		"event type as tag":            func(m *broker.Message) { m.Event.Type = "A || B" },
		"payload is 31 bytes":          func(m *broker.Message) { m.Event.Payload = bytes.Repeat([]byte("x"), 31) },
	}
	for want, mutate := range cases {
		m := testMessage()
		mutate(&m)
		_, err := Map(cfg, m)
		if !herald.IsPermanent(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	m := testMessage()
	m.Event.Payload = bytes.Repeat([]byte("x"), 30)
	if _, err := Map(cfg, m); err != nil {
		t.Errorf("payload at the limit: %v", err)
	}
	m.Event.Payload = bytes.Repeat([]byte("x"), 31)
	if _, err := Map(cfg, m); !errors.Is(err, herald.ErrPayloadTooLarge) {
		t.Errorf("over the limit: want ErrPayloadTooLarge, got %v", err)
	}
	cfg.Body, cfg.MaxPayload = BodyEnvelope, 100
	m.Event.Payload = bytes.Repeat([]byte("x"), 60) // fits, its envelope does not
	if _, err := Map(cfg, m); !errors.Is(err, herald.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "envelope is") {
		t.Errorf("envelope over the limit: got %v", err)
	}
}

func TestToPrimitive(t *testing.T) {
	cfg := baseConfig()
	cfg.KeyHeaders = []string{"transaction_id"}
	mapped, err := Map(cfg, testMessage())
	if err != nil {
		t.Fatal(err)
	}
	msg := toPrimitive(mapped)
	if msg.Topic != "wallet_events" || msg.GetTags() != "WalletGiftDebited" || msg.GetKeys() != "0190-ev tx-1" ||
		msg.GetShardingKey() != "user-7" || msg.GetProperty("CE_id") != "0190-ev" || !bytes.Equal(msg.Body, mapped.Body) {
		t.Fatalf("primitive message: %+v", msg)
	}
}

func TestOutcome(t *testing.T) {
	p := &Publisher{cfg: baseConfig()}
	p.cfg.Logger = slog.New(slog.DiscardHandler)
	m := testMessage()
	mq := &primitive.MessageQueue{Topic: "wallet_events", BrokerName: "b", QueueId: 3}
	ok := p.outcome(m, &primitive.SendResult{Status: primitive.SendOK, MsgID: "mid", QueueOffset: 42, MessageQueue: mq})
	if ok.Err != nil || ok.Receipt.MessageID != "mid" || ok.Receipt.Offset != 42 || ok.Receipt.Partition != 3 {
		t.Fatalf("SendOK: %+v", ok)
	}
	for _, s := range []primitive.SendStatus{primitive.SendFlushDiskTimeout, primitive.SendFlushSlaveTimeout, primitive.SendUnknownError} {
		if r := p.outcome(m, &primitive.SendResult{Status: s}); !herald.IsAmbiguous(r.Err) {
			t.Errorf("%s: want ambiguous, got %v", statusName(s), r.Err)
		}
	}
	r := p.outcome(m, &primitive.SendResult{Status: primitive.SendSlaveNotAvailable})
	if r.Err == nil || herald.IsAmbiguous(r.Err) || herald.IsPermanent(r.Err) {
		t.Errorf("SLAVE_NOT_AVAILABLE: want a plain retryable error, got %v", r.Err)
	}
}

func TestClassify(t *testing.T) {
	m := testMessage()
	cases := []struct {
		err                  error
		permanent, ambiguous bool
	}{
		{primitive.MQBrokerErr{ResponseCode: resMessageIllegal, ErrorMessage: "too big"}, true, false},
		{&primitive.MQBrokerErr{ResponseCode: resMessageIllegal}, true, false},
		{primitive.MQBrokerErr{ResponseCode: 17, ErrorMessage: "topic not exist"}, false, false},
		{errors.New("the topic=x route info not found"), false, false},
		{errors.New("i/o timeout"), false, true},
	}
	for _, c := range cases {
		err := classify(m, c.err)
		if herald.IsPermanent(err) != c.permanent || herald.IsAmbiguous(err) != c.ambiguous {
			t.Errorf("%v: permanent=%v ambiguous=%v, want %v/%v", c.err, herald.IsPermanent(err), herald.IsAmbiguous(err), c.permanent, c.ambiguous)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Setenv("HERALD_TEST_RMQ_SECRET", "sk")
	ok := Config{NameServers: []string{"127.0.0.1:9876"}, AccessKey: "ak", SecretKeyEnv: "HERALD_TEST_RMQ_SECRET"}
	if err := ok.WithDefaults().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	ns := []string{"127.0.0.1:9876"}
	cases := map[string]Config{
		"name_servers:":   {},
		"name_servers[0]": {NameServers: []string{"nohost"}},
		"tag: required":   {NameServers: ns, TagMode: TagConstant},
		"tag: \"a b\"":    {NameServers: ns, TagMode: TagConstant, Tag: "a b"},
		"tag_mode":        {NameServers: ns, TagMode: "random"},
		"tag_header:":     {NameServers: ns, TagMode: TagHeader},
		"body":            {NameServers: ns, Body: "xml"},
		"key_headers[1]":  {NameServers: ns, KeyHeaders: []string{"a", ""}},
		"access_key":      {NameServers: ns, AccessKey: "ak"},
		"max_payload":     {NameServers: ns, MaxPayload: -1},
		"send_timeout":    {NameServers: ns, SendTimeout: -1},
		"retries":         {NameServers: ns, Retries: -2},
		"parallel":        {NameServers: ns, Parallel: -1},
		"log_level":       {NameServers: ns, LogLevel: "loud"},
	}
	for want, cfg := range cases {
		err := cfg.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

// TestMapOwnedHeadersWin: a row that copied an incoming CloudEvent's CE_id
// and CE_type (in any case) maps to properties with exactly one id and one
// type, the event's; the copied id is kept renamed.
func TestMapOwnedHeadersWin(t *testing.T) {
	for i := range 8 {
		m := testMessage()
		m.Event.Headers = brokertest.CollidingHeaders(HeaderPrefix, i)
		got, err := Map(baseConfig(), m)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"id": m.Event.ID, "type": m.Event.Type} {
			var vals []string
			for k, v := range got.Properties {
				if strings.EqualFold(k, HeaderPrefix+name) {
					vals = append(vals, v)
				}
			}
			if len(vals) != 1 || vals[0] != want {
				t.Fatalf("headers %v: %s%s properties %q, want exactly [%s] (properties %v)",
					m.Event.Headers, HeaderPrefix, name, vals, want, got.Properties)
			}
		}
		if v := got.Properties[herald.RenamedHeaderPrefix+"ce_id"]; v != "forwarded-1" {
			t.Fatalf("headers %v: the copied id is %q under %sce_id, want forwarded-1 (properties %v)",
				m.Event.Headers, v, herald.RenamedHeaderPrefix, got.Properties)
		}
	}
}

// TestMapContentTypeOwned: a copied CE_contenttype never stands in for the
// one the publisher sets from the content-type header.
func TestMapContentTypeOwned(t *testing.T) {
	for range 20 {
		m := testMessage()
		m.Event.Headers["ce_ContentType"] = "text/forwarded"
		m.Event.Headers[contentTypeProperty] = "text/forwarded"
		got, err := Map(baseConfig(), m)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range got.Properties {
			if strings.EqualFold(k, contentTypeProperty) && (k != contentTypeProperty || v != "application/json") {
				t.Fatalf("property %s = %q, want only %s = application/json (properties %v)", k, v, contentTypeProperty, got.Properties)
			}
		}
	}
}
