package rmqfake

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Request codes served (RocketMQ's RequestCode).
const (
	CodeSendMessage   = 10
	CodeHeartbeat     = 34
	CodeUnregister    = 35
	CodeGetRouteInfo  = 105
	CodeSendMessageV2 = 310
)

// Response codes (RocketMQ's ResponseCode) the fake answers or injects.
const (
	ResSuccess           = 0
	ResSystemError       = 1
	ResSystemBusy        = 2
	ResNotSupported      = 3
	ResFlushDiskTimeout  = 10
	ResSlaveNotAvailable = 11
	ResFlushSlaveTimeout = 12
	ResMessageIllegal    = 13
	ResTopicNotExist     = 17
)

// maxFrame bounds a frame, so a corrupt length cannot allocate gigabytes.
const maxFrame = 16 << 20

// Command is one remoting command: the JSON header and the body.
type Command struct {
	Code      int               `json:"code"`
	Language  string            `json:"language"`
	Version   int               `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int               `json:"flag"`
	Remark    string            `json:"remark,omitempty"`
	ExtFields map[string]string `json:"extFields,omitempty"`
	Body      []byte            `json:"-"`
}

// flagOneway is bit 1 of flag: a request that wants no response.
const flagOneway = 2

// IsResponse reports bit 0 of flag.
func (c *Command) IsResponse() bool { return c.Flag&1 == 1 }

// ReadCommand reads one frame.
func ReadCommand(r io.Reader) (*Command, error) {
	var lens [8]byte
	if _, err := io.ReadFull(r, lens[:4]); err != nil {
		return nil, err
	}
	total := binary.BigEndian.Uint32(lens[:4])
	if total < 4 || total > maxFrame {
		return nil, fmt.Errorf("rmqfake: frame length %d out of range", total)
	}
	frame := make([]byte, total)
	if _, err := io.ReadFull(r, frame); err != nil {
		return nil, err
	}
	return DecodeFrame(frame)
}

// DecodeFrame decodes a frame without its leading total length.
func DecodeFrame(frame []byte) (*Command, error) {
	if len(frame) < 4 {
		return nil, errors.New("rmqfake: frame shorter than its header length")
	}
	mark := binary.BigEndian.Uint32(frame[:4])
	if ser := mark >> 24; ser != 0 {
		return nil, fmt.Errorf("rmqfake: serialization type %d not served (only 0, JSON)", ser)
	}
	hlen := int(mark & 0xFFFFFF)
	if 4+hlen > len(frame) {
		return nil, fmt.Errorf("rmqfake: header length %d beyond frame of %d", hlen, len(frame))
	}
	var c Command
	if err := json.Unmarshal(frame[4:4+hlen], &c); err != nil {
		return nil, fmt.Errorf("rmqfake: header: %w", err)
	}
	c.Body = frame[4+hlen:]
	return &c, nil
}

// Encode writes c as a frame, total length included.
func (c *Command) Encode() ([]byte, error) {
	header, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 8, 8+len(header)+len(c.Body))
	binary.BigEndian.PutUint32(out[:4], uint32(4+len(header)+len(c.Body)))
	binary.BigEndian.PutUint32(out[4:8], uint32(len(header))&0xFFFFFF) // high byte 0: JSON
	out = append(out, header...)
	return append(out, c.Body...), nil
}

// response builds the answer to req.
func response(req *Command, code int, remark string) *Command {
	return &Command{Code: code, Language: "JAVA", Version: req.Version, Opaque: req.Opaque, Flag: 1, Remark: remark,
		ExtFields: map[string]string{}}
}
