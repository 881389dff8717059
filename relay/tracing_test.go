package relay

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald"
)

// Rule: every publish attempt is a producer span in the trace the event was
// enqueued in, with the event id on it and the broker's error when it
// failed; the message carries the publish span's context onwards.
func TestPublishSpansFollowTheEnqueueTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	e := newEnv(t)
	ctx, checkout := tp.Tracer("test").Start(context.Background(), "checkout")
	tx, err := e.store.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	ev := herald.Event{ID: "traced-1", Topic: "t", Type: "Happened", Payload: []byte(`{}`)}
	if err := e.ob.Enqueue(ctx, tx, ev); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	checkout.End()
	e.pub.FailEvent(ev.ID, 1, errors.New("broker hiccup"))
	e.startWith(Config{Lanes: []Lane{e.lane()}, TracerProvider: tp})
	if err := waitCtx(t, 5*time.Second, func(ctx context.Context) error { return e.pub.WaitDistinct(ctx, 1) }); err != nil {
		t.Fatal(err)
	}

	var publishes []sdktrace.ReadOnlySpan
	waitFor(t, 5*time.Second, "two ended publish spans", func() bool {
		publishes = publishes[:0]
		for _, s := range rec.Ended() {
			if s.Name() == "publish t.Happened" {
				publishes = append(publishes, s)
			}
		}
		return len(publishes) == 2
	})
	for i, s := range publishes {
		if s.Parent().SpanID() != checkout.SpanContext().SpanID() || s.SpanContext().TraceID() != checkout.SpanContext().TraceID() {
			t.Errorf("publish span %d is not a child of the enqueue's span", i)
		}
		if s.SpanKind() != trace.SpanKindProducer || !hasAttr(s, "messaging.message.id", ev.ID) {
			t.Errorf("publish span %d: kind %v, attributes %v", i, s.SpanKind(), s.Attributes())
		}
	}
	if publishes[0].Status().Code != codes.Error || publishes[1].Status().Code == codes.Error {
		t.Errorf("span statuses %v then %v, want the failed attempt marked an error and the second not",
			publishes[0].Status(), publishes[1].Status())
	}
	got := e.pub.Records()[0].Message.Event.Headers["traceparent"]
	if want := publishes[1].SpanContext().SpanID().String(); len(got) < 52 || got[36:52] != want {
		t.Errorf("published traceparent %q does not carry the publish span %s", got, want)
	}
}

func hasAttr(s sdktrace.ReadOnlySpan, key, value string) bool {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key && kv.Value.AsString() == value {
			return true
		}
	}
	return false
}
