package relay

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/broker"
)

// tracerName is the instrumentation scope of the relay's spans.
const tracerName = "github.com/heraldhq/herald/relay"

// startPublishSpan starts the producer span of one message, as a child of
// the trace the event was enqueued in (its traceparent header, captured by
// Enqueue), and returns the message carrying the new span's context, so a
// consumer's span follows the publish. With no tracer installed the span
// does not record and the message is returned as it was.
func startPublishSpan(ctx context.Context, tracer trace.Tracer, lane string, msg broker.Message) (broker.Message, trace.Span) {
	parent := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier(msg.Event.Headers))
	_, span := tracer.Start(parent, "publish "+msg.Destination, trace.WithSpanKind(trace.SpanKindProducer))
	if !span.IsRecording() {
		return msg, span // no tracer installed, or not sampled: nothing to build
	}
	span.SetAttributes(
		attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.destination.name", msg.Destination),
		attribute.String("messaging.message.id", msg.Event.ID),
		attribute.String("herald.lane", lane),
		attribute.String("herald.event_type", msg.Event.Type),
		attribute.Int("herald.attempt", msg.Attempt),
	)
	headers := make(map[string]string, len(msg.Event.Headers)+2)
	maps.Copy(headers, msg.Event.Headers)
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(ctx, span), propagation.MapCarrier(headers))
	msg.Event.Headers = headers
	return msg, span
}

// endPublishSpan ends a message's span with the broker's answer.
func endPublishSpan(span trace.Span, res broker.Result) {
	if res.Err != nil {
		span.RecordError(res.Err)
		span.SetStatus(codes.Error, res.Err.Error())
	}
	span.End()
}
