package giftwall

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldhq/herald"
)

// Event types and topics of the application.
const (
	WalletGiftDebited = "WalletGiftDebited"
	TopicWallet       = "wallet"
)

// DefaultAsset is the asset gifts are paid in when a debit names none.
const DefaultAsset = "coin"

// ErrInsufficientBalance is returned by DebitGift when the sender's
// available balance does not cover the gift. Nothing is written.
var ErrInsufficientBalance = errors.New("giftwall: insufficient balance")

// ErrInvalidCommand is returned for a command missing a field or with a
// count or price below 1.
var ErrInvalidCommand = errors.New("giftwall: invalid command")

// Wallet keeps balances and the ledger, and enqueues WalletGiftDebited in
// the transaction that debits. It is safe for concurrent use.
type Wallet struct {
	db     *sql.DB
	sql    dialect
	outbox *herald.Outbox
	// walletMessages: payloads are WalletMessage (Config.WalletMessages).
	walletMessages bool
}

// GiftDebit is the command to pay for a gift.
type GiftDebit struct {
	// CommandID makes the command idempotent: a second debit with the same
	// tenant and command id changes nothing and returns the first's result.
	CommandID string
	Tenant    string
	Sender    string
	Receiver  string
	GiftID    string
	Count     int64
	UnitPrice int64
	// AssetType is what the gift is paid in. Defaults to DefaultAsset.
	AssetType string
}

func (d *GiftDebit) validate() error {
	if d.AssetType == "" {
		d.AssetType = DefaultAsset
	}
	switch {
	case d.CommandID == "" || d.Tenant == "" || d.Sender == "" || d.Receiver == "" || d.GiftID == "":
		return fmt.Errorf("%w: command id, tenant, sender, receiver and gift id are required", ErrInvalidCommand)
	case d.Count < 1 || d.UnitPrice < 1:
		return fmt.Errorf("%w: count %d and unit price %d must be at least 1", ErrInvalidCommand, d.Count, d.UnitPrice)
	case d.Count > 1_000_000 || d.UnitPrice > 1_000_000_000:
		return fmt.Errorf("%w: count %d or unit price %d is too large", ErrInvalidCommand, d.Count, d.UnitPrice)
	}
	return nil
}

// Debit is the result of a gift debit.
type Debit struct {
	TransactionID string
	EventID       string
	// Duplicate is true when the command had been applied before; the ids
	// are the first application's.
	Duplicate bool
}

// Delta is one balance change of a ledger transaction.
type Delta struct {
	UserID    string `json:"user_id"`
	AssetType string `json:"asset_type"`
	Available int64  `json:"available"`
	Frozen    int64  `json:"frozen"`
}

// GiftDebited is the payload of a WalletGiftDebited event.
type GiftDebited struct {
	TransactionID string  `json:"transaction_id"`
	CommandID     string  `json:"command_id"`
	Sender        string  `json:"sender"`
	Receiver      string  `json:"receiver"`
	GiftID        string  `json:"gift_id"`
	Count         int64   `json:"count"`
	UnitPrice     int64   `json:"unit_price"`
	AssetType     string  `json:"asset_type"`
	Deltas        []Delta `json:"deltas"`
	DebitedAt     int64   `json:"debited_at"` // Unix milliseconds
}

// Credit adds amount to a user's available balance (a top-up).
func (w *Wallet) Credit(ctx context.Context, tenant, user, asset string, amount int64) error {
	q := w.sql.q("INSERT INTO {p}wallet_balances (tenant, user_id, asset_type, available, frozen, updated_at) VALUES (?, ?, ?, ?, 0, ?)") +
		w.sql.upsertAdd(w.sql.prefix+"wallet_balances", "tenant, user_id, asset_type", "available")
	if _, err := w.db.ExecContext(ctx, q, tenant, user, asset, amount, nowMillis()); err != nil {
		return fmt.Errorf("giftwall: credit %s/%s: %w", tenant, user, err)
	}
	return nil
}

// Balance returns a user's available and frozen balance of one asset.
func (w *Wallet) Balance(ctx context.Context, tenant, user, asset string) (available, frozen int64, err error) {
	err = w.db.QueryRowContext(ctx, w.sql.q("SELECT available, frozen FROM {p}wallet_balances WHERE tenant = ? AND user_id = ? AND asset_type = ?"),
		tenant, user, asset).Scan(&available, &frozen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	return available, frozen, err
}

// DebitGift pays for a gift in one transaction: the sender's balance, the
// ledger transaction and its deltas, and the WalletGiftDebited event
// commit together or not at all. It is idempotent by (tenant, command id)
// and returns ErrInsufficientBalance, writing nothing, when the sender's
// available balance is short.
func (w *Wallet) DebitGift(ctx context.Context, d GiftDebit) (Debit, error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return Debit{}, fmt.Errorf("giftwall: debit: %w", err)
	}
	res, err := w.DebitGiftTx(ctx, tx, d)
	if err != nil {
		rollback(tx)
		return w.raced(ctx, d, err)
	}
	if err := tx.Commit(); err != nil {
		return w.raced(ctx, d, fmt.Errorf("giftwall: debit: commit: %w", err))
	}
	return res, nil
}

// raced turns the failure of a debit that lost a race with a concurrent
// run of the same command (a unique-key violation on the command id) into
// that run's result; any other failure is returned as is.
func (w *Wallet) raced(ctx context.Context, d GiftDebit, err error) (Debit, error) {
	if errors.Is(err, ErrInsufficientBalance) || errors.Is(err, ErrInvalidCommand) {
		return Debit{}, err
	}
	if prev, found, lerr := w.lookup(ctx, w.db, d); lerr == nil && found {
		return prev, nil
	}
	return Debit{}, err
}

// DebitGiftTx is DebitGift inside the caller's transaction, for a caller
// that writes more in the same transaction. Nothing, the event included,
// is visible until tx commits, and a rollback undoes all of it.
func (w *Wallet) DebitGiftTx(ctx context.Context, tx *sql.Tx, d GiftDebit) (Debit, error) {
	if err := d.validate(); err != nil {
		return Debit{}, err
	}
	if prev, found, err := w.lookup(ctx, tx, d); err != nil || found {
		return prev, err
	}
	amount := d.Count * d.UnitPrice
	now := nowMillis()
	res, err := tx.ExecContext(ctx, w.sql.q(`UPDATE {p}wallet_balances SET available = available - ?, updated_at = ?
	WHERE tenant = ? AND user_id = ? AND asset_type = ? AND available >= ?`),
		amount, now, d.Tenant, d.Sender, d.AssetType, amount)
	if err != nil {
		return Debit{}, fmt.Errorf("giftwall: debit %s: %w", d.CommandID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return Debit{}, fmt.Errorf("giftwall: debit %s: %w", d.CommandID, err)
		}
		return Debit{}, fmt.Errorf("%w: %s/%s cannot pay %d %s", ErrInsufficientBalance, d.Tenant, d.Sender, amount, d.AssetType)
	}
	out := Debit{TransactionID: herald.NewID(), EventID: herald.NewID()}
	deltas := []Delta{{UserID: d.Sender, AssetType: d.AssetType, Available: -amount}}
	if err := w.writeLedger(ctx, tx, d, out, deltas, now); err != nil {
		return Debit{}, err
	}
	if err := w.enqueue(ctx, tx, d, out, deltas, now); err != nil {
		return Debit{}, err
	}
	return out, nil
}

// lookup finds a command applied before.
func (w *Wallet) lookup(ctx context.Context, q querier, d GiftDebit) (Debit, bool, error) {
	var out Debit
	err := q.QueryRowContext(ctx, w.sql.q("SELECT transaction_id, event_id FROM {p}wallet_transactions WHERE tenant = ? AND command_id = ?"),
		d.Tenant, d.CommandID).Scan(&out.TransactionID, &out.EventID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Debit{}, false, nil
	case err != nil:
		return Debit{}, false, fmt.Errorf("giftwall: debit %s: %w", d.CommandID, err)
	}
	out.Duplicate = true
	return out, true, nil
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (w *Wallet) writeLedger(ctx context.Context, tx *sql.Tx, d GiftDebit, out Debit, deltas []Delta, now int64) error {
	_, err := tx.ExecContext(ctx, w.sql.q(`INSERT INTO {p}wallet_transactions
	(transaction_id, tenant, command_id, kind, sender, receiver, gift_id, gift_count, unit_price, asset_type, event_id, created_at)
	VALUES (?, ?, ?, 'gift', ?, ?, ?, ?, ?, ?, ?, ?)`),
		out.TransactionID, d.Tenant, d.CommandID, d.Sender, d.Receiver, d.GiftID, d.Count, d.UnitPrice, d.AssetType, out.EventID, now)
	if err != nil {
		return fmt.Errorf("giftwall: debit %s: ledger: %w", d.CommandID, err)
	}
	for _, dl := range deltas {
		_, err := tx.ExecContext(ctx, w.sql.q(`INSERT INTO {p}wallet_entries
	(transaction_id, tenant, user_id, asset_type, delta_available, delta_frozen) VALUES (?, ?, ?, ?, ?, ?)`),
			out.TransactionID, d.Tenant, dl.UserID, dl.AssetType, dl.Available, dl.Frozen)
		if err != nil {
			return fmt.Errorf("giftwall: debit %s: ledger entry: %w", d.CommandID, err)
		}
	}
	return nil
}

// enqueue writes WalletGiftDebited: keyed by sender (one sender's debits
// stay in order), with the transaction and command ids as headers, which
// become broker message headers (and, on RocketMQ with key_headers, message
// keys). The payload is GiftDebited, or the seed system's WalletMessage.
func (w *Wallet) enqueue(ctx context.Context, tx *sql.Tx, d GiftDebit, out Debit, deltas []Delta, now int64) error {
	g := GiftDebited{TransactionID: out.TransactionID, CommandID: d.CommandID,
		Sender: d.Sender, Receiver: d.Receiver, GiftID: d.GiftID, Count: d.Count, UnitPrice: d.UnitPrice,
		AssetType: d.AssetType, Deltas: deltas, DebitedAt: now}
	payload, err := json.Marshal(g)
	if w.walletMessages {
		payload, err = walletMessage(d.Tenant, g)
	}
	if err != nil {
		return err
	}
	return w.outbox.Enqueue(ctx, tx, herald.Event{
		ID: out.EventID, Tenant: d.Tenant, Topic: TopicWallet, Type: WalletGiftDebited,
		PartitionKey: d.Sender,
		Headers:      map[string]string{"transaction_id": out.TransactionID, "command_id": d.CommandID},
		Payload:      payload,
	})
}
