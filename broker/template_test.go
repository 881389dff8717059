package broker

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald"
)

func TestTemplateRendersEveryPlaceholder(t *testing.T) {
	tpl := MustParseTemplate("{tenant}.{topic}.{event_type}.{partition_key}")
	ev := herald.Event{Tenant: "app1", Topic: "wallet", Type: "GiftDebited", PartitionKey: "u1"}
	if got := tpl.Render(ev); got != "app1.wallet.GiftDebited.u1" {
		t.Fatalf("Render = %q", got)
	}
	if got := MustParseTemplate("fixed").Render(ev); got != "fixed" {
		t.Fatalf("a constant template rendered %q", got)
	}
}

// Rule: {header.NAME} renders the event's header NAME (a mapped table's
// column, carried by header_columns), and an event without it leaves the
// placeholder empty, which the relay refuses.
func TestTemplateRendersHeaderPlaceholder(t *testing.T) {
	tpl := MustParseTemplate("wallet.{header.asset_type}.{event_type}")
	ev := herald.Event{Type: "GiftDebited", Headers: map[string]string{"asset_type": "GOLD"}}
	if got := tpl.Render(ev); got != "wallet.GOLD.GiftDebited" {
		t.Fatalf("Render = %q", got)
	}
	ev.Headers = nil
	if got := tpl.EmptyField(ev); got != "header.asset_type" {
		t.Errorf("EmptyField without the header = %q, want header.asset_type", got)
	}
	if got := tpl.HeaderNames(); len(got) != 1 || got[0] != "asset_type" {
		t.Errorf("HeaderNames = %q", got)
	}
	if p, ok := tpl.Pattern("*"); !ok || p != "wallet.*.*" {
		t.Errorf("Pattern = %q, %v", p, ok)
	}
}

// Rule: EmptyField names the first placeholder an event leaves empty, and
// only placeholders the template uses count.
func TestTemplateEmptyField(t *testing.T) {
	tpl := MustParseTemplate("{tenant}.x.{event_type}.{partition_key}")
	full := herald.Event{Tenant: "app1", Topic: "wallet", Type: "GiftDebited", PartitionKey: "u1"}
	if got := tpl.EmptyField(full); got != "" {
		t.Errorf("EmptyField of a full event = %q", got)
	}
	noType := full
	noType.Type, noType.PartitionKey = "", ""
	if got := tpl.EmptyField(noType); got != "event_type" {
		t.Errorf("EmptyField without type and key = %q, want event_type", got)
	}
	if got := MustParseTemplate("x.{topic}").EmptyField(herald.Event{Topic: "t"}); got != "" {
		t.Errorf("a template without {tenant} reports %q for an event without tenant", got)
	}
	if got := MustParseTemplate("fixed").EmptyField(herald.Event{}); got != "" {
		t.Errorf("a constant template reports %q", got)
	}
}

func TestTemplateErrorsNameTheProblem(t *testing.T) {
	for tpl, want := range map[string]string{
		"":            "empty",
		"a.{colour}":  "unknown placeholder {colour}",
		"a.{header.}": "unknown placeholder {header.}",
		"a.{topic":    "unclosed",
		"a}.b":        "without '{'",
	} {
		if _, err := ParseTemplate(tpl); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTemplate(%q) = %v; want an error mentioning %q", tpl, err, want)
		}
	}
}

func TestHeadersFollowCloudEventsBinding(t *testing.T) {
	m := Message{Event: herald.Event{ID: "e1", Type: "T", Tenant: "app1", PartitionKey: "k", Topic: "top",
		Headers: map[string]string{"traceparent": "00-x", "ce-id": "spoofed"}}}
	h := Headers(m, "ce-", "")
	if h["ce-id"] != "e1" || h["ce-type"] != "T" || h["ce-source"] != DefaultSource || h["ce-subject"] != "k" ||
		h["ce-tenant"] != "app1" || h["ce-specversion"] != "1.0" || h["traceparent"] != "00-x" {
		t.Fatalf("headers = %v", h)
	}
}
