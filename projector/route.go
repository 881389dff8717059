package projector

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// job is a message on its way to a worker, with the statements its
// routing made (Config.Statements' answer), so they are made once.
type job struct {
	broker.Received
	stmts []store.Stmt
	err   error
	made  bool
}

// dispatch picks the worker for a message. By tenant and partition key
// when it has one, so one key's events are applied one after another in
// the order received. Without a key there is no order to keep: when the
// projection gives its statements (Config.Statements), by the read-model
// row they write (routeArgs), so that one row's events meet in one worker
// instead of waiting on each other's row locks across workers; else, or
// when the statements cannot be made, by event id.
func (p *Projector) dispatch(m broker.Received, n int) (job, int) {
	j := job{Received: m}
	h := fnv.New32a()
	h.Write([]byte(m.Event.Tenant))
	h.Write([]byte{0})
	if m.Event.PartitionKey != "" {
		h.Write([]byte(m.Event.PartitionKey))
		return j, int(h.Sum32() % uint32(n))
	}
	if p.cfg.Statements != nil {
		j.stmts, j.err = p.statements(m.Event)
		j.made = true
	}
	if !routeByRow(h, j) {
		h.Write([]byte(m.Event.ID))
	}
	return j, int(h.Sum32() % uint32(n))
}

// routeByRow writes the routing arguments of j's first statement to h and
// reports whether there were any.
func routeByRow(h hash.Hash32, j job) bool {
	if !j.made || j.err != nil || len(j.stmts) == 0 {
		return false
	}
	args := routeArgs(j.stmts[0])
	if len(args) == 0 {
		return false
	}
	h.Write([]byte{1}) // apart from any event id
	var buf []byte
	for _, a := range args {
		buf = appendArg(buf[:0], a)
		h.Write(buf)
		h.Write([]byte{0})
	}
	return true
}

// routeArgs returns the arguments that name the read-model row st writes:
// an INSERT's first value (an upsert's key comes first by convention, as
// lockOrder assumes too); for other statements, whose first arguments are
// often the values SET rather than the key, all of them. All of them is
// never coarser than the row: a value that is not the key only spreads
// one row's events over workers, as routing by event id does.
func routeArgs(st store.Stmt) []any {
	if len(st.Args) > 0 && isInsert(st.SQL) {
		return st.Args[:1]
	}
	return st.Args
}

func isInsert(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n(")
	return len(q) >= 6 && strings.EqualFold(q[:6], "INSERT")
}

// appendArg appends a's text with its kind, so that 1 and "1" differ.
func appendArg(b []byte, a any) []byte {
	switch x := a.(type) {
	case int64:
		return strconv.AppendInt(append(b, 'i'), x, 10)
	case float64:
		return strconv.AppendUint(append(b, 'f'), math.Float64bits(x), 16)
	case string:
		return append(append(b, 's'), x...)
	case []byte:
		return append(append(b, 'b'), x...)
	}
	return fmt.Appendf(b, "%T:%v", a, a)
}
