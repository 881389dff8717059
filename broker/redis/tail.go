package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald"
)

// tailBlock is how long one XREAD waits, so that Tail sees ctx end soon.
const tailBlock = time.Second

// Tail calls fn for each entry added to stream from now on, until ctx
// ends, then returns nil. It reads with XREAD (no group), so it changes
// nothing for consumer groups. bodyField is the publisher's (Config). ready,
// if not nil, is called once Tail knows where "now" is.
func Tail(ctx context.Context, url, stream, bodyField string, ready func(), fn func(stream string, ev herald.Event)) error {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("redis: url: %w", err)
	}
	cl := goredis.NewClient(opts)
	defer cl.Close()
	if bodyField == "" {
		bodyField = DefaultBodyField
	}
	last := "0-0"
	if info, err := cl.XInfoStream(ctx, stream).Result(); err == nil {
		last = info.LastGeneratedID
	} else if !errors.Is(err, goredis.Nil) && err.Error() != "ERR no such key" {
		return fmt.Errorf("redis: tail %s: %w", stream, err)
	}
	if ready != nil {
		ready()
	}
	for ctx.Err() == nil {
		res, err := cl.XRead(ctx, &goredis.XReadArgs{Streams: []string{stream, last}, Block: tailBlock}).Result()
		if errors.Is(err, goredis.Nil) || ctx.Err() != nil {
			continue
		}
		if err != nil {
			return fmt.Errorf("redis: tail %s: %w", stream, err)
		}
		for _, m := range res[0].Messages {
			fn(stream, entryEvent(m, stream, bodyField))
			last = m.ID
		}
	}
	return nil
}
