package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	. "github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/store"
)

// walletLane is a lane on a wallet_outbox-shaped table, as docs/adopt.md
// configures it; each case below breaks one thing.
const walletLane = `store: {driver: sqlite, dsn: x.db}
brokers:
  b: {type: stdout}
lanes:
  - name: wallet
    table: wallet_outbox
    destination: "wallet.{event_type}"
    columns: {id: event_id, type: event_type, tenant: app_code, key: user_id, payload: payload_json,
      created_at: created_at_ms, status: status, attempts: retry_count, next_attempt: next_retry_at_ms,
      lease_until: lock_until_ms, lease_owner: worker_id, last_error: last_error}
    statuses: {pending: [pending, retryable], in_flight: delivering, delivered: delivered, dead: dead}
    time_unit: epoch_ms
`

func TestAdoptMappingParses(t *testing.T) {
	f, err := parse([]byte(walletLane), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := f.Lanes[0].Mapping()
	want := store.Mapping{
		Columns: store.Columns{ID: "event_id", Type: "event_type", Tenant: "app_code", Key: "user_id",
			Payload: "payload_json", CreatedAt: "created_at_ms", Status: "status", Attempts: "retry_count",
			NextAttempt: "next_retry_at_ms", LeaseUntil: "lock_until_ms", LeaseOwner: "worker_id", LastError: "last_error"},
		Statuses: store.Statuses{Pending: store.StatusValues{"pending", "retryable"}, Retry: "retryable",
			InFlight: "delivering", Delivered: "delivered", Dead: "dead"},
		TimeUnit: store.TimeEpochMillis,
	}
	if fmtMapping(m) != fmtMapping(want) {
		t.Fatalf("mapping = %+v\nwant      %+v", m, want)
	}
	// header_columns carries columns as headers.
	hc := strings.Replace(walletLane, "time_unit: epoch_ms", "time_unit: epoch_ms\n    header_columns: {transactionId: transaction_id, commandId: command_id}", 1)
	if f, err = parse([]byte(hc), "test.yaml"); err != nil ||
		fmt.Sprint(f.Lanes[0].Mapping().HeaderColumns) != "map[commandId:command_id transactionId:transaction_id]" {
		t.Fatalf("header_columns: %v, %+v", err, f)
	}
	// One pending value may be given as a scalar.
	one := strings.Replace(walletLane, "pending: [pending, retryable]", "pending: pending", 1)
	if f, err = parse([]byte(one), "test.yaml"); err != nil || f.Lanes[0].Statuses.Retry != "pending" ||
		len(f.Lanes[0].Statuses.Pending) != 1 {
		t.Fatalf("scalar pending: %v, %+v", err, f)
	}
}

func fmtMapping(m store.Mapping) string { return fmt.Sprintf("%+v", m) }

func TestAdoptBadMappingNamesTheKey(t *testing.T) {
	key := "lanes[0] (wallet)."
	// Each case replaces, in walletLane, every even string by the next.
	cases := map[string]struct {
		edits []string
		want  string
	}{
		"column named twice": {[]string{"lease_owner: worker_id", "lease_owner: event_id"},
			key + "columns.lease_owner: column event_id is already columns.id"},
		"status in two states": {[]string{"dead: dead", "dead: retryable"},
			key + `statuses.dead: value "retryable" is already statuses.pending`},
		"retry not pending": {[]string{"dead: dead}", "dead: dead, retry: delivered}"},
			key + `statuses.retry: "delivered" is not one of statuses.pending`},
		"unknown time unit": {[]string{"time_unit: epoch_ms", "time_unit: seconds"},
			key + `time_unit: "seconds" is not one of datetime, epoch_ms`},
		"no time unit":       {[]string{"time_unit: epoch_ms", ""}, key + "time_unit: is required"},
		"required column":    {[]string{" payload: payload_json,", ""}, key + "columns.payload: is required"},
		"bad identifier":     {[]string{"payload: payload_json", `payload: "payload; DROP"`}, key + "columns.payload:"},
		"unknown column key": {[]string{"payload: payload_json", "body: payload_json"}, "lanes[0].columns.body: unknown key"},
		"no in_flight":       {[]string{"in_flight: delivering, ", ""}, key + "statuses.in_flight: is required"},
		"ordered without a key column": {[]string{" key: user_id,", "", "time_unit: epoch_ms", "time_unit: epoch_ms\n    ordering: key"},
			key + "ordering: key needs columns.key and columns.created_at on a mapped table"},
		"fair without a tenant column": {[]string{" tenant: app_code,", "", "time_unit: epoch_ms", "time_unit: epoch_ms\n    fair_tenants: true"},
			key + "fair_tenants: needs columns.tenant on a mapped table"},
		"body field without source": {[]string{"time_unit: epoch_ms", "time_unit: epoch_ms\n    body: [{field: eventId, column: event_id}, {field: source}]"},
			key + "body[1] (source): has no source: give one of column, const, payload"},
		"body field twice": {[]string{"time_unit: epoch_ms", "time_unit: epoch_ms\n    body: [{field: a, const: x}, {field: a, column: event_id}]"},
			key + `body[1].field: "a" is already body[0]`},
		"body bad payload mode": {[]string{"time_unit: epoch_ms", "time_unit: epoch_ms\n    body: [{field: p, payload: base64}]"},
			key + `body[0].payload: "base64" is not one of raw, string`},
		"table read two ways": {[]string{"time_unit: epoch_ms", "time_unit: epoch_ms\n  - {name: plain, table: wallet_outbox, destination: x}"},
			"lanes[1] (plain).columns: lane wallet reads table wallet_outbox through another mapping"},
		"header reserved": {[]string{"time_unit: epoch_ms", "time_unit: epoch_ms\n    header_columns: {ce-id: transaction_id}"},
			key + `header_columns.ce-id: header "ce-id" is reserved`},
		"header column twice": {[]string{"time_unit: epoch_ms", "time_unit: epoch_ms\n    header_columns: {a: transaction_id, b: transaction_id}"},
			key + "header_columns.b: column transaction_id is already header_columns.a"},
		"header twice but for case": {[]string{"time_unit: epoch_ms", "time_unit: epoch_ms\n    header_columns: {TxId: transaction_id, txid: command_id}"},
			key + `header_columns.txid: header "txid" is already header_columns.TxId but for case`},
		"header bad column": {[]string{"time_unit: epoch_ms", "time_unit: epoch_ms\n    header_columns: {tx: \"tx; DROP\"}"},
			key + "header_columns.tx:"},
		"destination header not carried": {[]string{`destination: "wallet.{event_type}"`, `destination: "wallet.{header.asset}"`},
			key + "destination: {header.asset} is no header_columns entry"},
		"default table read two ways": {[]string{"table: wallet_outbox", "table: herald_outbox", "time_unit: epoch_ms", "time_unit: epoch_ms\n  - {name: plain, destination: x}"},
			"lanes[1] (plain).columns: lane wallet reads table herald_outbox through another mapping"},
		"tenant without column": {[]string{"tenant: app_code, ", "", "time_unit: epoch_ms", "time_unit: epoch_ms\n    tenant: live"},
			key + "tenant: needs columns.tenant"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			y := walletLane
			for i := 0; i < len(c.edits); i += 2 {
				if !strings.Contains(y, c.edits[i]) {
					t.Fatalf("walletLane has no %q", c.edits[i])
				}
				y = strings.Replace(y, c.edits[i], c.edits[i+1], 1)
			}
			_, err := parse([]byte(y), "test.yaml")
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
		})
	}
}
