package sleep

import (
	"context"
	"testing"
	"time"
)

func TestForReportsWhetherTheTimePassed(t *testing.T) {
	if !For(context.Background(), time.Millisecond) {
		t.Error("For on a live context returned false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if For(ctx, time.Hour) || For(ctx, 0) {
		t.Error("For on an ended context returned true")
	}
	if !Until(context.Background(), time.Now().Add(-time.Second)) {
		t.Error("Until a past moment on a live context returned false")
	}
}
