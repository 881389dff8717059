package postgres

import (
	"encoding/binary"

	"github.com/jackc/pglogrepl"

	"github.com/heraldhq/herald/store"
)

// tupleColumn is one column of a pgoutput tuple: its kind ('n' null, 'u'
// unchanged TOAST, 't' text, 'b' binary) and its bytes, which point into
// the replication message and are valid only until the next is received.
type tupleColumn struct {
	kind byte
	data []byte
}

// insert decodes an Insert message of pgoutput protocol version 1 ('I',
// relation id, 'N', the new tuple) without pglogrepl, which allocates each
// column and copies it byte by byte: with 1 KiB payloads that was a tenth
// of the relay's CPU. handled is false for any other message, or one this
// cannot read, which the caller then gives to pglogrepl.Parse (and its
// errors); inScope is as for event.
func (d *decoder) insert(wal []byte, sc store.Scope) (rec store.Record, inScope, handled bool) {
	relID, cols, ok := splitInsert(wal, d.cols[:0])
	if !ok {
		return rec, false, false
	}
	d.cols = cols
	rel := d.rels[relID]
	if rel == nil || rel.RelationID != d.relid {
		return rec, false, true
	}
	rec = d.rowRecord(rel, cols)
	return rec, d.inScope(rec, sc), true
}

// splitInsert returns the relation id and the columns of an Insert
// message, appended to cols; ok is false if wal is not one or is cut short.
func splitInsert(wal []byte, cols []tupleColumn) (relID uint32, _ []tupleColumn, ok bool) {
	if len(wal) < 8 || wal[0] != 'I' || wal[5] != 'N' {
		return 0, nil, false
	}
	relID = binary.BigEndian.Uint32(wal[1:5])
	n, p := int(binary.BigEndian.Uint16(wal[6:8])), 8
	for range n {
		if p >= len(wal) {
			return 0, nil, false
		}
		c := tupleColumn{kind: wal[p]}
		p++
		switch c.kind {
		case pglogrepl.TupleDataTypeNull, pglogrepl.TupleDataTypeToast:
		case pglogrepl.TupleDataTypeText, pglogrepl.TupleDataTypeBinary:
			if p+4 > len(wal) {
				return 0, nil, false
			}
			size := int(binary.BigEndian.Uint32(wal[p:]))
			p += 4
			if size < 0 || size > len(wal)-p {
				return 0, nil, false
			}
			c.data, p = wal[p:p+size], p+size
		default:
			return 0, nil, false
		}
		cols = append(cols, c)
	}
	return relID, cols, true
}
