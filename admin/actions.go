package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
)

// WithToken turns on the API's actions (replay, purge, retry now, pause,
// resume) for callers that send token as "Authorization: Bearer TOKEN".
// Without it, or with an empty token, the API and dashboard are read-only.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// maxActionBody bounds an action's JSON body.
const maxActionBody = 1 << 20

// authorized checks an action's token and writes the refusal if it fails:
// 403 when no token is configured (read-only), 401 when the caller's is
// missing or wrong.
func (a api) authorized(w http.ResponseWriter, r *http.Request) bool {
	if a.token == "" {
		writeError(w, http.StatusForbidden, "read-only: actions are off until admin.token (or HERALD_ADMIN_TOKEN) is set")
		return false
	}
	if !a.tokenSent(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
		writeError(w, http.StatusUnauthorized, "this action needs the admin token (Authorization: Bearer TOKEN)")
		return false
	}
	return true
}

// tokenSent reports whether r carries the configured token.
func (a api) tokenSent(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	// Comparing digests keeps the comparison constant-time whatever the lengths.
	want, have := sha256.Sum256([]byte(a.token)), sha256.Sum256([]byte(got))
	return ok && a.token != "" && subtle.ConstantTimeCompare(want[:], have[:]) == 1
}

// action wraps a lane action handler: the token, the lane from the path
// and a JSON body decoded into a fresh T.
func action[T any](a api, do func(w http.ResponseWriter, r *http.Request, lane laneRef, body T)) http.HandlerFunc {
	return guarded(a, a.openLane, do)
}

// projectionAction is action for a projection named in the path.
func projectionAction[T any](a api, do func(w http.ResponseWriter, r *http.Request, p projRef, body T)) http.HandlerFunc {
	return guarded(a, a.openProjection, do)
}

// guarded checks the token, finds the action's target with find (which
// writes its own refusal) and decodes the JSON body into a fresh T.
func guarded[R, T any](a api, find func(http.ResponseWriter, *http.Request) (R, bool),
	do func(w http.ResponseWriter, r *http.Request, target R, body T)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.authorized(w, r) {
			return
		}
		target, ok := find(w, r)
		if !ok {
			return
		}
		var body T
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxActionBody))
		dec.DisallowUnknownFields()
		// An action without fields may be posted with no body (io.EOF).
		if err := dec.Decode(&body); err != nil && !errors.Is(err, io.EOF) {
			writeError(w, http.StatusBadRequest, "body: "+err.Error())
			return
		}
		do(w, r, target, body)
	}
}

// ReplayRequest is the body of POST /api/lanes/{lane}/replay: the query
// (statuses default to dead), a dry run or the pace, and who and why.
type ReplayRequest struct {
	Statuses []store.Status `json:"statuses"`
	Types    []string       `json:"types"`
	Keys     []string       `json:"keys"`
	EventIDs []string       `json:"event_ids"`
	Tenant   string         `json:"tenant"`
	Since    time.Time      `json:"since"`
	Until    time.Time      `json:"until"`
	// All must be set to replay a lane's whole states without a filter.
	All    bool    `json:"all"`
	DryRun bool    `json:"dry_run"`
	Sample int     `json:"sample"`
	Rate   float64 `json:"rate"`
	By     string  `json:"by"`
	Reason string  `json:"reason"`
	// WaitSeconds is how long to wait for the relay to publish the replayed
	// events before answering with their outcome (default 5, at most 60).
	WaitSeconds float64 `json:"wait_seconds"`
}

// ReplayResponse answers a replay: what it matched and, unless a dry run,
// how many it replayed.
type ReplayResponse struct {
	ReplayPreview
	Replayed int64 `json:"replayed"`
	DryRun   bool  `json:"dry_run"`
	// Outcome is what became of the replayed events (not on a dry run).
	Outcome *ReplayOutcome `json:"outcome,omitempty"`
}

// replayWait is how long an API replay waits for the relay: the request's
// wait_seconds, default 5 s, at most a minute.
func replayWait(secs float64) time.Duration {
	if secs <= 0 {
		return 5 * time.Second
	}
	return min(time.Duration(secs*float64(time.Second)), time.Minute)
}

// defaultAPIReplayRate paces API replays that name no rate.
const defaultAPIReplayRate = 100

func (a api) replay(w http.ResponseWriter, r *http.Request, lane laneRef, b ReplayRequest) {
	q := store.EventQuery{Scope: lane.Scope(), Statuses: b.Statuses, Types: b.Types, Keys: b.Keys,
		EventIDs: b.EventIDs, Since: b.Since, Until: b.Until}
	if len(q.Statuses) == 0 {
		q.Statuses = []store.Status{store.StatusDead}
	}
	if b.Tenant != "" {
		q.Tenant = b.Tenant
	}
	filtered := len(b.Types)+len(b.Keys)+len(b.EventIDs) > 0 || b.Tenant != "" || !b.Since.IsZero() || !b.Until.IsZero()
	if filtered == b.All {
		writeError(w, http.StatusBadRequest, "select events (event_ids, types, keys, tenant, since, until) or set all (not both)")
		return
	}
	rep := lane.st.Replays()
	sample := b.Sample
	if sample <= 0 || sample > maxDeadPage {
		sample = 10
	}
	preview, err := PreviewReplay(r.Context(), rep, q, sample)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out := ReplayResponse{ReplayPreview: preview, DryRun: b.DryRun}
	if !b.DryRun && preview.Count > 0 {
		rate := b.Rate
		if rate <= 0 {
			rate = defaultAPIReplayRate
		}
		var rows []int64
		out.Replayed, err = Replay(r.Context(), rep, q, ReplayOptions{Rate: rate, By: caller(r, b.By), Reason: b.Reason,
			Replayed: func(ids []int64) { rows = append(rows, ids...) }})
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("replayed %d, then: %v", out.Replayed, err))
			return
		}
		o, err := AwaitReplay(r.Context(), rep, q.Scope, rows, replayWait(b.WaitSeconds))
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("replayed %d, then: %v", out.Replayed, err))
			return
		}
		out.Outcome = &o
	}
	writeJSON(w, out)
}

// caller is who the history records for an API action: the name the
// caller gave, and where it came from.
func caller(r *http.Request, by string) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if by == "" {
		by = "admin API"
	}
	return by + " from " + host
}

// IDsRequest is the body of the purge and retry actions.
type IDsRequest struct {
	EventIDs []string `json:"event_ids"`
	// All purges every dead event of the lane (purge only).
	All bool `json:"all"`
}

// ChangeResponse says how many rows an action changed.
type ChangeResponse struct {
	Changed int64 `json:"changed"`
}

func (a api) purge(w http.ResponseWriter, r *http.Request, lane laneRef, b IDsRequest) {
	if b.All == (len(b.EventIDs) > 0) {
		writeError(w, http.StatusBadRequest, "name the dead event_ids to purge, or set all (not both)")
		return
	}
	n, err := lane.st.Purge(r.Context(), lane.Scope(), b.EventIDs)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, ChangeResponse{Changed: n})
}

func (a api) retryNow(w http.ResponseWriter, r *http.Request, lane laneRef, b IDsRequest) {
	if len(b.EventIDs) == 0 {
		writeError(w, http.StatusBadRequest, "name the pending event_ids to retry now")
		return
	}
	rep := lane.st.Replays()
	n, err := rep.RetryNow(r.Context(), lane.Scope(), b.EventIDs)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, ChangeResponse{Changed: n})
}

// setPaused answers POST /api/lanes/{lane}/pause and /resume.
func (a api) setPaused(paused bool) func(http.ResponseWriter, *http.Request, laneRef, struct{}) {
	return func(w http.ResponseWriter, r *http.Request, lane laneRef, _ struct{}) {
		if err := lane.st.SetLanePaused(r.Context(), lane.Name, paused); err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		writeJSON(w, map[string]bool{"paused": paused})
	}
}

// session answers GET /api/session: whether actions are on, and whether
// the caller's token (if it sent one) opens them. It never says the token.
func (a api) session(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]bool{"actions": a.token != "", "authorized": a.tokenSent(r)})
}
