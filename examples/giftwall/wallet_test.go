package giftwall_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/store"
)

func debit(cmd string, count, price int64) giftwall.GiftDebit {
	return giftwall.GiftDebit{CommandID: cmd, Tenant: "aurora", Sender: "alice", Receiver: "bob",
		GiftID: "rose", Count: count, UnitPrice: price}
}

// outboxRows returns every row of the App's wallet outbox.
func outboxRows(t *testing.T, s store.Store, a *giftwall.App) []store.Record {
	t.Helper()
	recs, err := s.List(context.Background(), store.ListParams{Scope: store.Scope{Table: a.Config().WalletTable},
		Status: store.StatusPending, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func ledgerCount(t *testing.T, s store.Store, a *giftwall.App) (txs, entries int) {
	t.Helper()
	p := a.Config().Prefix
	if err := s.DB().QueryRow("SELECT COUNT(*) FROM " + p + "wallet_transactions").Scan(&txs); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().QueryRow("SELECT COUNT(*) FROM " + p + "wallet_entries").Scan(&entries); err != nil {
		t.Fatal(err)
	}
	return txs, entries
}

func balance(t *testing.T, a *giftwall.App, user string) int64 {
	t.Helper()
	avail, frozen, err := a.Wallet.Balance(context.Background(), "aurora", user, giftwall.DefaultAsset)
	if err != nil {
		t.Fatal(err)
	}
	if frozen != 0 {
		t.Fatalf("frozen balance %d, want 0", frozen)
	}
	return avail
}

// TestDebitGiftWritesLedgerAndEvent: one debit changes the balance, writes
// the ledger transaction and its delta, and enqueues WalletGiftDebited with
// the sender as key and the ids as headers; the same command again changes
// nothing.
func TestDebitGiftWritesLedgerAndEvent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		a := newApp(t, s, giftwall.Config{})
		if err := a.Wallet.Credit(ctx, "aurora", "alice", giftwall.DefaultAsset, 100); err != nil {
			t.Fatal(err)
		}
		first, err := a.Wallet.DebitGift(ctx, debit("cmd-1", 3, 10))
		if err != nil || first.Duplicate {
			t.Fatalf("first debit: %+v, %v", first, err)
		}
		again, err := a.Wallet.DebitGift(ctx, debit("cmd-1", 3, 10))
		if err != nil || !again.Duplicate || again.TransactionID != first.TransactionID || again.EventID != first.EventID {
			t.Fatalf("[idempotency] repeated command: %+v, %v; want the first's ids %+v, Duplicate", again, err, first)
		}
		if got := balance(t, a, "alice"); got != 70 {
			t.Fatalf("balance %d after one 30-coin gift (sent twice), want 70", got)
		}
		if txs, entries := ledgerCount(t, s, a); txs != 1 || entries != 1 {
			t.Fatalf("ledger: %d transactions, %d entries; want 1 and 1", txs, entries)
		}
		recs := outboxRows(t, s, a)
		if len(recs) != 1 {
			t.Fatalf("[idempotency] %d events in the outbox, want 1", len(recs))
		}
		ev := recs[0].Event
		if ev.ID != first.EventID || ev.Type != giftwall.WalletGiftDebited || ev.PartitionKey != "alice" || ev.Tenant != "aurora" ||
			ev.Headers["transaction_id"] != first.TransactionID || ev.Headers["command_id"] != "cmd-1" {
			t.Fatalf("event %+v does not carry the debit's ids, key and tenant", ev)
		}
		var p giftwall.GiftDebited
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		want := giftwall.Delta{UserID: "alice", AssetType: "coin", Available: -30}
		if p.Receiver != "bob" || p.GiftID != "rose" || p.Count != 3 || p.AssetType != "coin" || len(p.Deltas) != 1 || p.Deltas[0] != want {
			t.Fatalf("payload %+v", p)
		}
	})
}

// TestDebitGiftRefusesInsufficientBalance: a short balance writes nothing.
func TestDebitGiftRefusesInsufficientBalance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		a := newApp(t, s, giftwall.Config{})
		if err := a.Wallet.Credit(ctx, "aurora", "alice", giftwall.DefaultAsset, 20); err != nil {
			t.Fatal(err)
		}
		_, err := a.Wallet.DebitGift(ctx, debit("cmd-1", 3, 10))
		if !errors.Is(err, giftwall.ErrInsufficientBalance) {
			t.Fatalf("debit of 30 from 20: %v, want ErrInsufficientBalance", err)
		}
		if _, err := a.Wallet.DebitGift(ctx, debit("cmd-2", 1, 10)); err != nil {
			t.Fatalf("a debit the balance covers, after a refusal: %v", err)
		}
		if got := balance(t, a, "alice"); got != 10 {
			t.Fatalf("balance %d, want 10", got)
		}
		if txs, _ := ledgerCount(t, s, a); txs != 1 {
			t.Fatalf("%d ledger transactions, want 1 (the refused one wrote none)", txs)
		}
		if n := len(outboxRows(t, s, a)); n != 1 {
			t.Fatalf("%d events, want 1 (the refused debit enqueued none)", n)
		}
	})
}

// TestDebitGiftRollbackLeavesNoEvent: the event is part of the debit's
// transaction; rolling it back leaves no event, no ledger, no debit.
func TestDebitGiftRollbackLeavesNoEvent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		a := newApp(t, s, giftwall.Config{})
		if err := a.Wallet.Credit(ctx, "aurora", "alice", giftwall.DefaultAsset, 100); err != nil {
			t.Fatal(err)
		}
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Wallet.DebitGiftTx(ctx, tx, debit("cmd-1", 3, 10)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := len(outboxRows(t, s, a)); n != 0 {
			t.Fatalf("%d events after a rollback, want 0", n)
		}
		if txs, entries := ledgerCount(t, s, a); txs+entries != 0 || balance(t, a, "alice") != 100 {
			t.Fatalf("after a rollback: %d transactions, %d entries, balance %d; want none and 100", txs, entries, balance(t, a, "alice"))
		}
		// The command was never applied, so it may run now.
		if res, err := a.Wallet.DebitGift(ctx, debit("cmd-1", 3, 10)); err != nil || res.Duplicate {
			t.Fatalf("the rolled-back command again: %+v, %v", res, err)
		}
	})
}

// TestDebitGiftConcurrentSameCommand: one command sent by eight callers at
// once debits once and enqueues one event; every caller gets its ids.
func TestDebitGiftConcurrentSameCommand(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		a := newApp(t, s, giftwall.Config{})
		if err := a.Wallet.Credit(ctx, "aurora", "alice", giftwall.DefaultAsset, 1000); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		results := make([]giftwall.Debit, 8)
		errs := make([]error, 8)
		for i := range results {
			wg.Go(func() { results[i], errs[i] = a.Wallet.DebitGift(ctx, debit("cmd-race", 1, 10)) })
		}
		wg.Wait()
		for i := range results {
			if errs[i] != nil || results[i].TransactionID != results[0].TransactionID {
				t.Fatalf("caller %d: %+v, %v; want transaction %s", i, results[i], errs[i], results[0].TransactionID)
			}
		}
		if got := balance(t, a, "alice"); got != 990 {
			t.Fatalf("balance %d, want 990: debited once", got)
		}
		if n := len(outboxRows(t, s, a)); n != 1 {
			t.Fatalf("%d events, want 1", n)
		}
	})
}
