package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/relay"
)

// previewLimitMax bounds --limit: the rows are read at once.
const previewLimitMax = 1000

func (a *app) lanePreviewCommand() *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "preview NAME",
		Short: "Print the lane's next messages as they would be sent, without claiming or changing a row",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > previewLimitMax {
				return fmt.Errorf("%w: --limit: %d is out of range [1, %d]", config.ErrInvalid, limit, previewLimitMax)
			}
			msgs, err := a.preview(cmd.Context(), args[0], limit)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(msgs)
			}
			return printPreview(a.stdout, msgs)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 10, "how many messages")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// previewed is one message of `herald lane preview`.
type previewed struct {
	EventID string `json:"event_id"`
	Attempt int    `json:"attempt"`
	broker.Preview
	// Body is the body as JSON when it is JSON, else as a string.
	Body json.RawMessage `json:"body"`
	// Error says why the message would not be sent (the row would go dead
	// or be discarded unpublished).
	Error string `json:"error,omitempty"`
}

// preview reads the lane's next messages and maps them as its broker's
// adapter would (broker.Previewer), or generically.
func (a *app) preview(ctx context.Context, name string, limit int) ([]previewed, error) {
	if f, err := a.loadConfig(); err != nil {
		return nil, err
	} else if _, err := f.Lane(name); err != nil {
		return nil, err
	}
	rt, err := a.load(ctx, openExisting, name)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	l, err := rt.File.Lane(name)
	if err != nil {
		return nil, err
	}
	b := rt.File.Brokers[l.Broker]
	maxPayload := 0
	if pl, ok := b.Config.(broker.PayloadLimiter); ok {
		maxPayload = pl.PayloadLimit()
	}
	msgs, err := relay.Preview(ctx, rt.Store, *l, maxPayload, limit)
	if err != nil {
		return nil, fmt.Errorf("lane %s: %w", name, err)
	}
	out := make([]previewed, len(msgs))
	for i, m := range msgs {
		out[i] = mapPreview(b.Config, m)
	}
	return out, nil
}

// mapPreview maps one message with the broker's own mapping, if it has one.
func mapPreview(cfg broker.DriverConfig, m relay.Previewed) previewed {
	p := previewed{EventID: m.Message.Event.ID, Attempt: m.Message.Attempt}
	var err error
	if pv, ok := cfg.(broker.Previewer); ok {
		p.Preview, err = pv.Preview(m.Message)
	} else {
		p.Preview = broker.GenericPreview(m.Message)
	}
	switch {
	case m.Err != nil:
		p.Error = m.Err.Error()
	case err != nil:
		p.Error = err.Error()
	}
	p.Body = jsonBody(p.Preview.Body)
	return p
}

// jsonBody is body as JSON: as it is when it is JSON, else a JSON string.
func jsonBody(body []byte) json.RawMessage {
	if json.Valid(body) {
		return body
	}
	s, _ := json.Marshal(string(body))
	return s
}

// printPreview prints each message as a block of lines.
func printPreview(w io.Writer, msgs []previewed) error {
	var b strings.Builder
	if len(msgs) == 0 {
		fmt.Fprintf(&b, "no message is due on this lane\n")
	}
	for i, m := range msgs {
		fmt.Fprintf(&b, "#%d event %s (attempt %d)\n", i+1, m.EventID, m.Attempt)
		if m.Error != "" {
			fmt.Fprintf(&b, "  not sent: %s\n", m.Error)
		}
		fmt.Fprintf(&b, "  destination: %s\n", m.Destination)
		if m.Tag != "" {
			fmt.Fprintf(&b, "  tag: %s\n", m.Tag)
		}
		if len(m.Keys) > 0 {
			fmt.Fprintf(&b, "  keys: %s\n", strings.Join(m.Keys, " "))
		}
		if m.PartitionKey != "" {
			fmt.Fprintf(&b, "  partition key: %s\n", m.PartitionKey)
		}
		names := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			fmt.Fprintf(&b, "  header %s: %s\n", k, m.Headers[k])
		}
		fmt.Fprintf(&b, "  body: %s\n", m.Body)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
