package giftwall

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projector"
)

// ProjectionName names the gift wall projection in the projection table.
const ProjectionName = "gift_wall"

// GiftWall is the read model of gifts received: per tenant, user and gift,
// the total count and when the last one arrived.
type GiftWall struct {
	db  *sql.DB
	sql dialect
}

// WallEntry is one row of a user's gift wall.
type WallEntry struct {
	Tenant, UserID, GiftID string
	TotalCount             int64
	LastReceivedAt         int64 // Unix milliseconds
}

// Apply is the projection handler: it adds one WalletGiftDebited event
// (either payload form, see giftOf) to
// the receiver's wall, inside the projector's transaction (which also
// marks the event done, so it is applied exactly once). A payload that
// cannot be read is permanent: the event goes dead instead of blocking.
func (g *GiftWall) Apply(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
	if ev.Type != WalletGiftDebited {
		return nil // not ours (a shared subject); done without changes
	}
	p, err := giftOf(ev)
	if err != nil {
		return err
	}
	table := g.sql.prefix + "user_gift_wall"
	q := g.sql.q("INSERT INTO {p}user_gift_wall (tenant, user_id, gift_id, total_count, last_received_at) VALUES (?, ?, ?, ?, ?)") +
		g.sql.upsertAdd(table, "tenant, user_id, gift_id", "total_count") + ", last_received_at = " +
		g.sql.greatest(g.lastCol(table), g.newCol("last_received_at"))
	_, err = tx.ExecContext(ctx, q, ev.Tenant, p.Receiver, p.GiftID, p.Count, p.DebitedAt)
	return err
}

// lastCol is the existing row's column in an upsert's update clause.
func (g *GiftWall) lastCol(table string) string {
	if g.sql.d.Name == "mysql" {
		return "last_received_at"
	}
	return table + ".last_received_at"
}

// newCol is the inserted row's column in an upsert's update clause.
func (g *GiftWall) newCol(col string) string {
	if g.sql.d.Name == "mysql" {
		return "VALUES(" + col + ")"
	}
	return "excluded." + col
}

// Reset empties the wall, for a projection rebuild.
func (g *GiftWall) Reset(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, g.sql.q("DELETE FROM {p}user_gift_wall"))
	return err
}

// Of returns a user's gift wall, by gift id.
func (g *GiftWall) Of(ctx context.Context, tenant, user string) ([]WallEntry, error) {
	rows, err := g.db.QueryContext(ctx, g.sql.q(`SELECT tenant, user_id, gift_id, total_count, last_received_at
	FROM {p}user_gift_wall WHERE tenant = ? AND user_id = ? ORDER BY gift_id`), tenant, user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []WallEntry
	for rows.Next() {
		var e WallEntry
		if err := rows.Scan(&e.Tenant, &e.UserID, &e.GiftID, &e.TotalCount, &e.LastReceivedAt); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// NewProjector returns the gift wall's projector on the App's store. Run
// it with a broker.Subscriber of the wallet lane's messages.
func (a *App) NewProjector(log *slog.Logger) (*projector.Projector, error) {
	return projector.New(projector.Config{
		Settings: projector.Settings{Name: ProjectionName, Table: a.cfg.ProjectionTable},
		Store:    a.ps, Handler: a.Wall.Apply, Reset: a.Wall.Reset, Logger: log,
	})
}

// wallKey is one (tenant, user, gift) cell of the wall.
type wallKey struct{ tenant, user, gift string }

// Report compares the gift wall with the wallet ledger.
type Report struct {
	// Gifts is the number of gift transactions in the ledger.
	Gifts int64
	// Cells is the number of (tenant, receiver, gift) totals compared.
	Cells int
	// Diffs lists every cell whose totals differ, "tenant/user/gift:
	// ledger N, wall M", sorted; empty when the wall matches.
	Diffs []string
}

// OK reports whether the wall matches the ledger.
func (r Report) OK() bool { return len(r.Diffs) == 0 }

// String is the one-line verdict.
func (r Report) String() string {
	if r.OK() {
		return fmt.Sprintf("verified: %d gifts, gift wall matches ledger", r.Gifts)
	}
	shown := r.Diffs
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("… %d more", len(r.Diffs)-5))
	}
	return fmt.Sprintf("MISMATCH: %d gifts, %d of %d (tenant, receiver, gift) totals differ: %s",
		r.Gifts, len(r.Diffs), r.Cells, strings.Join(shown, "; "))
}

// Verify compares the gift wall with the wallet ledger for every tenant,
// receiver and gift.
func (a *App) Verify(ctx context.Context) (Report, error) {
	ledger, err := a.sums(ctx, `SELECT tenant, receiver, gift_id, SUM(gift_count), COUNT(*)
	FROM {p}wallet_transactions WHERE kind = 'gift' GROUP BY tenant, receiver, gift_id`)
	if err != nil {
		return Report{}, fmt.Errorf("giftwall: verify: ledger: %w", err)
	}
	wall, err := a.sums(ctx, "SELECT tenant, user_id, gift_id, total_count, 0 FROM {p}user_gift_wall")
	if err != nil {
		return Report{}, fmt.Errorf("giftwall: verify: wall: %w", err)
	}
	var r Report
	for _, v := range ledger {
		r.Gifts += v[1]
	}
	cells := map[wallKey]bool{}
	for k := range ledger {
		cells[k] = true
	}
	for k := range wall {
		cells[k] = true
	}
	r.Cells = len(cells)
	for k := range cells {
		if l, w := ledger[k][0], wall[k][0]; l != w {
			r.Diffs = append(r.Diffs, fmt.Sprintf("%s/%s/%s: ledger %d, wall %d", k.tenant, k.user, k.gift, l, w))
		}
	}
	sort.Strings(r.Diffs)
	return r, nil
}

// sums reads (tenant, user, gift, total, count) rows into a map.
func (a *App) sums(ctx context.Context, query string) (map[wallKey][2]int64, error) {
	rows, err := a.db.QueryContext(ctx, a.sql.q(query))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[wallKey][2]int64{}
	for rows.Next() {
		var k wallKey
		var v [2]int64
		if err := rows.Scan(&k.tenant, &k.user, &k.gift, &v[0], &v[1]); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}
