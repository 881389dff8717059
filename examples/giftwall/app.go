package giftwall

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// Config configures an App.
type Config struct {
	// Store is the database of the application's tables, the outbox tables
	// and the projection table (every store keeps projections). Required.
	Store store.Store
	// Prefix is put before the application's own table names (tests use a
	// random one). Defaults to none.
	Prefix string
	// WalletTable, RoomTable and RobotTable are the outbox tables of the
	// three lanes. Default to Prefix + "wallet_outbox", "room_outbox" and
	// "robot_outbox".
	WalletTable, RoomTable, RobotTable string
	// ProjectionTable keeps the gift wall's exactly-once bookkeeping.
	// Defaults to Prefix + "giftwall_projection_events".
	ProjectionTable string
	// LaunchDelay is how long after its ignition a rocket launches.
	// Defaults to 3s.
	LaunchDelay time.Duration
	// Scheduler schedules a rocket's launch event. Defaults to enqueueing
	// it, delayed, into RoomTable in a transaction of its own.
	Scheduler Scheduler
	// WalletMessages makes the WalletGiftDebited payload the wallet message
	// of the system Herald comes from (WalletMessage: app code, transaction
	// and command ids, user, asset type, deltas, the gift as payload,
	// occurred-at in ms) instead of GiftDebited, for consumers that read
	// that format (on RocketMQ there). The gift wall reads both.
	WalletMessages bool
}

func (c Config) withDefaults() Config {
	def := func(v *string, name string) {
		if *v == "" {
			*v = c.Prefix + name
		}
	}
	def(&c.WalletTable, "wallet_outbox")
	def(&c.RoomTable, "room_outbox")
	def(&c.RobotTable, "robot_outbox")
	def(&c.ProjectionTable, "giftwall_projection_events")
	if c.LaunchDelay <= 0 {
		c.LaunchDelay = 3 * time.Second
	}
	return c
}

func (c Config) validate() error {
	if c.Store == nil {
		return errors.New("giftwall: Store is required")
	}
	if c.Prefix != "" {
		if err := herald.ValidateIdentifier(c.Prefix); err != nil {
			return fmt.Errorf("giftwall: Prefix: %w", err)
		}
	}
	for _, t := range []string{c.WalletTable, c.RoomTable, c.RobotTable, c.ProjectionTable} {
		if err := herald.ValidateIdentifier(t); err != nil {
			return fmt.Errorf("giftwall: table: %w", err)
		}
	}
	return nil
}

// App is the whole application on one database: the wallet, the rooms, the
// robots and the gift wall.
type App struct {
	cfg    Config
	db     *sql.DB
	ps     store.ProjectionStore
	sql    dialect
	Wallet *Wallet
	Rooms  *Rooms
	Robots *Robots
	Wall   *GiftWall
}

// New returns the application for cfg, or an error naming the field at fault.
func New(cfg Config) (*App, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, db: cfg.Store.DB(), ps: cfg.Store,
		sql: dialect{d: cfg.Store.Dialect(), prefix: cfg.Prefix}}
	outbox := func(table string) (*herald.Outbox, error) {
		return herald.NewOutbox(herald.OutboxConfig{Table: table, Dialect: a.sql.d})
	}
	wallet, err := outbox(cfg.WalletTable)
	if err != nil {
		return nil, err
	}
	room, err := outbox(cfg.RoomTable)
	if err != nil {
		return nil, err
	}
	robot, err := outbox(cfg.RobotTable)
	if err != nil {
		return nil, err
	}
	a.Wallet = &Wallet{db: a.db, sql: a.sql, outbox: wallet, walletMessages: cfg.WalletMessages}
	a.Rooms = newRooms(a.db, a.sql, room, cfg.LaunchDelay, cfg.Scheduler)
	a.Robots = &Robots{db: a.db, outbox: robot}
	a.Wall = &GiftWall{db: a.db, sql: a.sql}
	return a, nil
}

// Config returns the App's configuration, defaults filled in.
func (a *App) Config() Config { return a.cfg }

// Migrate creates the outbox tables, the projection table and the
// application's tables. It is safe to run repeatedly. The room table gets
// the indexes of ordered claims (its lane keeps each room's order).
func (a *App) Migrate(ctx context.Context) error {
	for _, t := range []string{a.cfg.WalletTable, a.cfg.RoomTable, a.cfg.RobotTable} {
		if err := store.MigrateFor(ctx, a.cfg.Store, t, store.TableUse{Ordered: t == a.cfg.RoomTable}); err != nil {
			return fmt.Errorf("giftwall: migrate %s: %w", t, err)
		}
	}
	if err := a.ps.MigrateProjections(ctx, a.cfg.ProjectionTable); err != nil {
		return fmt.Errorf("giftwall: migrate %s: %w", a.cfg.ProjectionTable, err)
	}
	for _, stmt := range a.sql.schema() {
		if _, err := a.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("giftwall: create tables: %w", err)
		}
	}
	return nil
}

// Lanes returns the three relay lanes on pub with the application's
// settings: the wallet lane, the room lane (ordered per room, with the
// rocket step) and the robot lane (stale events discarded after
// discardAfter, delivered rows kept for a minute). Programs that read
// lanes from a config file use WithHooks instead.
func (a *App) Lanes(pub broker.Publisher, discardAfter time.Duration) []relay.Lane {
	lane := func(name, table string) relay.Lane {
		return relay.Lane{Name: name, Table: table, Publisher: pub,
			Destination:  broker.MustParseTemplate("giftwall.{tenant}." + name + ".{event_type}"),
			PollInterval: 100 * time.Millisecond,
			Retry:        relay.Retry{Initial: 50 * time.Millisecond, Max: time.Second, MaxAttempts: 30}}
	}
	wallet := lane("wallet", a.cfg.WalletTable)
	room := lane("room", a.cfg.RoomTable)
	room.Ordering = relay.OrderingKey
	robot := lane("robot", a.cfg.RobotTable)
	robot.DiscardAfter = discardAfter
	robot.Retention = relay.Retention{Delivered: time.Minute, Dead: time.Hour, Interval: 10 * time.Second}
	return a.WithHooks([]relay.Lane{wallet, room, robot})
}

// WithHooks returns lanes with the application's before-publish step set
// on every lane of the room table (lanes from a config file, which cannot
// name Go functions).
func (a *App) WithHooks(lanes []relay.Lane) []relay.Lane {
	out := make([]relay.Lane, len(lanes))
	for i, l := range lanes {
		if l.Table == a.cfg.RoomTable {
			l.BeforePublish = a.Rooms.BeforePublish
		}
		out[i] = l
	}
	return out
}

// dialect writes the application's SQL for one database kind.
type dialect struct {
	d      herald.Dialect
	prefix string
}

// q puts the table prefix in for {p} and, on PostgreSQL, numbers the ?
// placeholders ($1, $2, …).
func (s dialect) q(query string) string {
	query = strings.ReplaceAll(query, "{p}", s.prefix)
	if s.d.Name != "postgres" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// upsertAdd returns the ON CONFLICT / ON DUPLICATE KEY clause that adds
// the inserted values of cols to the existing row of table.
func (s dialect) upsertAdd(table, conflict string, cols ...string) string {
	set := make([]string, len(cols))
	for i, c := range cols {
		if s.d.Name == "mysql" {
			set[i] = fmt.Sprintf("%s = %s + VALUES(%s)", c, c, c)
		} else {
			set[i] = fmt.Sprintf("%s = %s.%s + excluded.%s", c, table, c, c)
		}
	}
	if s.d.Name == "mysql" {
		return " ON DUPLICATE KEY UPDATE " + strings.Join(set, ", ")
	}
	return " ON CONFLICT (" + conflict + ") DO UPDATE SET " + strings.Join(set, ", ")
}

// greatest is the larger of two expressions.
func (s dialect) greatest(a, b string) string {
	if s.d.Name == "sqlite" {
		return "max(" + a + ", " + b + ")"
	}
	return "GREATEST(" + a + ", " + b + ")"
}

// insertIgnore is an INSERT that skips a row whose key exists.
func (s dialect) insertIgnore(table, cols, conflict string) string {
	ph := strings.TrimSuffix(strings.Repeat("?, ", strings.Count(cols, ",")+1), ", ")
	if s.d.Name == "mysql" {
		return "INSERT IGNORE INTO " + table + " (" + cols + ") VALUES (" + ph + ")"
	}
	return "INSERT INTO " + table + " (" + cols + ") VALUES (" + ph + ") ON CONFLICT (" + conflict + ") DO NOTHING"
}

// schema is the application's tables. Types and syntax common to SQLite,
// MySQL/MariaDB and PostgreSQL; times are Unix milliseconds.
func (s dialect) schema() []string {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS {p}wallet_balances (
	tenant     VARCHAR(64) NOT NULL,
	user_id    VARCHAR(64) NOT NULL,
	asset_type VARCHAR(32) NOT NULL,
	available  BIGINT      NOT NULL DEFAULT 0,
	frozen     BIGINT      NOT NULL DEFAULT 0,
	updated_at BIGINT      NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, user_id, asset_type))`,
		`CREATE TABLE IF NOT EXISTS {p}wallet_transactions (
	transaction_id VARCHAR(64) NOT NULL PRIMARY KEY,
	tenant         VARCHAR(64) NOT NULL,
	command_id     VARCHAR(64) NOT NULL,
	kind           VARCHAR(16) NOT NULL,
	sender         VARCHAR(64) NOT NULL,
	receiver       VARCHAR(64) NOT NULL,
	gift_id        VARCHAR(64) NOT NULL,
	gift_count     BIGINT      NOT NULL,
	unit_price     BIGINT      NOT NULL,
	asset_type     VARCHAR(32) NOT NULL,
	event_id       VARCHAR(64) NOT NULL,
	created_at     BIGINT      NOT NULL,
	UNIQUE (tenant, command_id))`,
		`CREATE TABLE IF NOT EXISTS {p}wallet_entries (
	transaction_id  VARCHAR(64) NOT NULL,
	tenant          VARCHAR(64) NOT NULL,
	user_id         VARCHAR(64) NOT NULL,
	asset_type      VARCHAR(32) NOT NULL,
	delta_available BIGINT      NOT NULL,
	delta_frozen    BIGINT      NOT NULL,
	PRIMARY KEY (transaction_id, user_id, asset_type))`,
		`CREATE TABLE IF NOT EXISTS {p}room_members (
	tenant     VARCHAR(64) NOT NULL,
	room_id    VARCHAR(64) NOT NULL,
	user_id    VARCHAR(64) NOT NULL,
	entered_at BIGINT      NOT NULL,
	PRIMARY KEY (tenant, room_id, user_id))`,
		`CREATE TABLE IF NOT EXISTS {p}user_gift_wall (
	tenant           VARCHAR(64) NOT NULL,
	user_id          VARCHAR(64) NOT NULL,
	gift_id          VARCHAR(64) NOT NULL,
	total_count      BIGINT      NOT NULL,
	last_received_at BIGINT      NOT NULL,
	PRIMARY KEY (tenant, user_id, gift_id))`,
	}
	for i := range stmts {
		stmts[i] = s.q(stmts[i])
	}
	return stmts
}

// rollback ends tx after a failure; its error adds nothing to the first.
func rollback(tx *sql.Tx) { _ = tx.Rollback() }

func nowMillis() int64 { return time.Now().UnixMilli() }
