package giftwall

import (
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald"
)

// WalletMessage is the wallet message of the system Herald comes from: the
// body its wallet service publishes (to RocketMQ there) and its gift wall
// consumer reads. With Config.WalletMessages the wallet enqueues it as the
// WalletGiftDebited payload, so a raw-body lane publishes exactly this.
type WalletMessage struct {
	// AppCode is the tenant.
	AppCode string `json:"app_code"`
	// EventType is the canonical event type (WalletGiftDebited).
	EventType     string `json:"event_type"`
	TransactionID string `json:"transaction_id"`
	CommandID     string `json:"command_id"`
	// UserID is the user whose wallet changed: the gift's sender.
	UserID    string  `json:"user_id"`
	AssetType string  `json:"asset_type"`
	Deltas    []Delta `json:"deltas"`
	// Payload is the event type's own data: a GiftPayload for WalletGiftDebited.
	Payload json.RawMessage `json:"payload"`
	// OccurredAt is when the debit committed, Unix milliseconds.
	OccurredAt int64 `json:"occurred_at"`
}

// GiftPayload is a WalletMessage's payload for WalletGiftDebited.
type GiftPayload struct {
	Receiver  string `json:"receiver"`
	GiftID    string `json:"gift_id"`
	Count     int64  `json:"count"`
	UnitPrice int64  `json:"unit_price"`
}

// walletMessage builds the seed system's message for a gift debit.
func walletMessage(tenant string, g GiftDebited) ([]byte, error) {
	gift, err := json.Marshal(GiftPayload{Receiver: g.Receiver, GiftID: g.GiftID, Count: g.Count, UnitPrice: g.UnitPrice})
	if err != nil {
		return nil, err
	}
	return json.Marshal(WalletMessage{AppCode: tenant, EventType: WalletGiftDebited, TransactionID: g.TransactionID,
		CommandID: g.CommandID, UserID: g.Sender, AssetType: g.AssetType, Deltas: g.Deltas, Payload: gift,
		OccurredAt: g.DebitedAt})
}

// giftOf reads a WalletGiftDebited payload in either form: GiftDebited, or
// a WalletMessage (told apart by its app_code and payload). A payload
// that is neither, or lacks the receiver, gift or count, is a permanent
// error.
func giftOf(ev herald.Event) (GiftDebited, error) {
	var m WalletMessage
	if err := json.Unmarshal(ev.Payload, &m); err != nil {
		return GiftDebited{}, herald.Permanent(fmt.Errorf("event %s: payload: %w", ev.ID, err))
	}
	var p GiftDebited
	if m.AppCode != "" && m.Payload != nil {
		var g GiftPayload
		if err := json.Unmarshal(m.Payload, &g); err != nil {
			return GiftDebited{}, herald.Permanent(fmt.Errorf("event %s: wallet message payload: %w", ev.ID, err))
		}
		p = GiftDebited{TransactionID: m.TransactionID, CommandID: m.CommandID, Sender: m.UserID, Receiver: g.Receiver,
			GiftID: g.GiftID, Count: g.Count, UnitPrice: g.UnitPrice, AssetType: m.AssetType, Deltas: m.Deltas,
			DebitedAt: m.OccurredAt}
	} else if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return GiftDebited{}, herald.Permanent(fmt.Errorf("event %s: payload: %w", ev.ID, err))
	}
	if p.Receiver == "" || p.GiftID == "" || p.Count < 1 {
		return GiftDebited{}, herald.Permanent(fmt.Errorf("event %s: payload lacks receiver, gift id or count", ev.ID))
	}
	return p, nil
}
