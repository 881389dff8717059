package herald_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store/sqlite"
)

// Enqueue an event in the same transaction as the business rows: it exists
// if and only if the transaction commits.
func ExampleOutbox_Enqueue() {
	dir, _ := os.MkdirTemp("", "herald-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, _ := sqlite.Open(ctx, filepath.Join(dir, "app.db"), sqlite.Options{})
	defer s.Close()
	_ = s.Migrate(ctx, herald.DefaultTable)

	ob, _ := herald.NewOutbox(herald.OutboxConfig{Dialect: sqlite.Dialect})
	tx, _ := s.DB().BeginTx(ctx, nil)
	// … the business writes go here, in tx …
	err := ob.Enqueue(ctx, tx, herald.Event{
		ID: "gift-1", Topic: "wallet", Type: "WalletGiftDebited", PartitionKey: "user-42",
		Payload: []byte(`{"gift":"rose","count":3}`),
	})
	fmt.Println("enqueued:", err == nil)
	_ = tx.Commit()

	rec, _ := s.Get(ctx, herald.DefaultTable, "gift-1")
	fmt.Println(rec.Status, rec.Event.Type, string(rec.Event.Payload))
	// Output:
	// enqueued: true
	// pending WalletGiftDebited {"gift":"rose","count":3}
}
