package rmqfake

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"
)

// messageMagic is the commit-log magic code (MESSAGE_MAGIC_CODE, V1).
const messageMagic = 0xdaa320a7

// encodeMessages writes messages in the store format a pull returns and
// the client's primitive.DecodeMessage reads: total size, magic, body CRC,
// queue id, flag, queue offset, commit-log offset, sysFlag, born time,
// born host (IPv4 4 bytes + port), store time, store host, reconsume
// times, prepared-transaction offset, body (4-byte length), topic (1-byte
// length), properties (2-byte length). Bodies go uncompressed (sysFlag 0).
func encodeMessages(msgs []Message) []byte {
	var out bytes.Buffer
	for _, m := range msgs {
		out.Write(encodeMessage(m))
	}
	return out.Bytes()
}

func encodeMessage(m Message) []byte {
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.BigEndian, v) }
	props := joinProperties(m.Properties)
	host := hostBytes(m.MsgID)
	w(int32(0)) // total size, set below
	w(uint32(messageMagic))
	w(crc32.ChecksumIEEE(m.Body))
	w(int32(m.QueueID))
	w(int32(0))
	w(m.QueueOffset)
	w(m.CommitLogOffset)
	w(int32(0))
	w(m.BornTimestamp.UnixMilli())
	b.Write(host)
	w(m.StoreTimestamp.UnixMilli())
	b.Write(host)
	w(int32(0))
	w(int64(0))
	w(int32(len(m.Body)))
	b.Write(m.Body)
	b.WriteByte(byte(len(m.Topic)))
	b.WriteString(m.Topic)
	w(int16(len(props)))
	b.WriteString(props)
	out := b.Bytes()
	binary.BigEndian.PutUint32(out[:4], uint32(len(out)))
	return out
}

// hostBytes is the 8-byte IPv4 host and port an offset msg id starts with.
func hostBytes(msgID string) []byte {
	out := make([]byte, 8)
	if len(msgID) >= 16 {
		for i := range 8 {
			n, _ := strconv.ParseUint(msgID[2*i:2*i+2], 16, 8)
			out[i] = byte(n)
		}
	}
	return out
}

// joinProperties is parseProperties' inverse.
func joinProperties(p map[string]string) string {
	var sb strings.Builder
	for k, v := range p {
		sb.WriteString(k)
		sb.WriteByte(1)
		sb.WriteString(v)
		sb.WriteByte(2)
	}
	return sb.String()
}
