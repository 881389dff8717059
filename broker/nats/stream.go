package nats

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ensureStream creates the stream, or adds the configured subjects an
// existing stream lacks, and learns its dedupe window. Its other settings
// (retention, replicas, limits) are the operator's and are left alone.
func (p *Publisher) ensureStream(ctx context.Context) error {
	p.readyMu.Lock()
	defer p.readyMu.Unlock()
	if p.ready.Load() {
		return nil
	}
	s, err := p.js.Stream(ctx, p.cfg.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		s, err = p.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       p.cfg.Stream,
			Subjects:   p.cfg.Subjects,
			Storage:    jetstream.FileStorage,
			Duplicates: p.cfg.Duplicates,
			Replicas:   max(p.cfg.Replicas, 1),
		})
		if err != nil {
			return fmt.Errorf("nats: create stream %s on subjects %v: %w", p.cfg.Stream, p.cfg.Subjects, err)
		}
	case err != nil:
		return fmt.Errorf("nats: look up stream %s: %w", p.cfg.Stream, err)
	default:
		if s, err = p.addSubjects(ctx, s); err != nil {
			return err
		}
	}
	p.window.Store(int64(s.CachedInfo().Config.Duplicates))
	p.ready.Store(true)
	return nil
}

// addSubjects updates an existing stream to cover the configured subjects.
func (p *Publisher) addSubjects(ctx context.Context, s jetstream.Stream) (jetstream.Stream, error) {
	cfg := s.CachedInfo().Config
	missing := false
	for _, subj := range p.cfg.Subjects {
		if !slices.Contains(cfg.Subjects, subj) {
			cfg.Subjects = append(cfg.Subjects, subj)
			missing = true
		}
	}
	if !missing {
		return s, nil
	}
	s, err := p.js.UpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("nats: add subjects %v to stream %s: %w", p.cfg.Subjects, p.cfg.Stream, err)
	}
	return s, nil
}

// isUnavailable reports errors that mean "the server is not there now",
// as opposed to a configuration the server refuses.
func isUnavailable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, natsgo.ErrTimeout) ||
		errors.Is(err, natsgo.ErrNoResponders) ||
		errors.Is(err, natsgo.ErrConnectionClosed) ||
		errors.Is(err, natsgo.ErrDisconnected) ||
		errors.Is(err, natsgo.ErrConnectionReconnecting) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// redact hides the password or token in a server URL list before it goes
// into an error or a log.
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, raw := range parts {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			parts[i] = "(unparsable url)"
			continue
		}
		if u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			} else {
				u.User = url.User("xxxxx") // a lone user part is a token
			}
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}
