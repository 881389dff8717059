package rmqfake

import (
	"bytes"
	"compress/zlib"
	"io"
	"strconv"
	"strings"
	"time"
)

// sysFlagCompressed is bit 0 of sysFlag: the body is zlib-compressed.
const sysFlagCompressed = 1

func (c *Cluster) serveBroker(req *Command) *Command {
	switch req.Code {
	case CodeHeartbeat: // recorded by serveConn, which knows the connection
		return response(req, ResSuccess, "")
	case CodeUnregister:
		c.unregister(req)
		return response(req, ResSuccess, "")
	case CodeSendMessage, CodeSendMessageV2:
		return c.send(req)
	}
	if resp, ok := c.serveConsumer(req); ok {
		return resp
	}
	return response(req, ResNotSupported, "rmqfake broker: request code "+strconv.Itoa(req.Code)+" not supported")
}

// sendHeader is SendMessageRequestHeader, from either wire form.
type sendHeader struct {
	group, topic, properties string
	queueID, sysFlag         int
	bornTimestamp            int64
}

// v2Names maps SEND_MESSAGE_V2's one-letter fields to SEND_MESSAGE's.
var v2Names = map[string]string{"a": "producerGroup", "b": "topic", "e": "queueId", "f": "sysFlag",
	"g": "bornTimestamp", "i": "properties"}

func parseSendHeader(req *Command) (sendHeader, error) {
	f := req.ExtFields
	if req.Code == CodeSendMessageV2 {
		f = make(map[string]string, len(v2Names))
		for short, long := range v2Names {
			f[long] = req.ExtFields[short]
		}
	}
	h := sendHeader{group: f["producerGroup"], topic: f["topic"], properties: f["properties"]}
	var err error
	if h.queueID, err = strconv.Atoi(f["queueId"]); err != nil {
		return h, errField("queueId", f["queueId"])
	}
	if h.sysFlag, err = strconv.Atoi(f["sysFlag"]); err != nil {
		return h, errField("sysFlag", f["sysFlag"])
	}
	if h.bornTimestamp, err = strconv.ParseInt(f["bornTimestamp"], 10, 64); err != nil {
		return h, errField("bornTimestamp", f["bornTimestamp"])
	}
	if h.topic == "" {
		return h, errField("topic", "")
	}
	return h, nil
}

type fieldError struct{ name, value string }

func (e fieldError) Error() string {
	return "rmqfake: bad send header field " + e.name + "=" + strconv.Quote(e.value)
}
func errField(name, value string) error { return fieldError{name, value} }

func (c *Cluster) send(req *Command) *Command {
	act := c.fault.next()
	switch {
	case act.drop:
		return nil
	case act.code != ResSuccess && act.code != ResFlushDiskTimeout && act.code != ResFlushSlaveTimeout &&
		act.code != ResSlaveNotAvailable:
		return response(req, act.code, "rmqfake: injected fault")
	}
	h, err := parseSendHeader(req)
	if err != nil {
		return response(req, ResMessageIllegal, err.Error())
	}
	body := req.Body
	if h.sysFlag&sysFlagCompressed != 0 {
		if body, err = inflate(body); err != nil {
			return response(req, ResMessageIllegal, "rmqfake: compressed body: "+err.Error())
		}
	}
	m, ok := c.store.append(h.topic, h.queueID, Message{Topic: h.topic, Body: body,
		Properties: parseProperties(h.properties), BornTimestamp: time.UnixMilli(h.bornTimestamp),
		ProducerGroup: h.group}, c.storeHost())
	if !ok {
		return response(req, ResMessageIllegal, "rmqfake: queue "+strconv.Itoa(h.queueID)+" of topic "+h.topic+" does not exist")
	}
	resp := response(req, act.code, "")
	resp.ExtFields["msgId"] = m.MsgID
	resp.ExtFields["queueId"] = strconv.Itoa(m.QueueID)
	resp.ExtFields["queueOffset"] = strconv.FormatInt(m.QueueOffset, 10)
	return resp
}

// storeHost is the broker address as the offset message id encodes it.
func (c *Cluster) storeHost() string { return c.Broker() }

func inflate(b []byte) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// parseProperties splits RocketMQ's property string: name \x01 value,
// pairs separated by \x02.
func parseProperties(s string) map[string]string {
	out := map[string]string{}
	for _, item := range strings.Split(s, "\x02") {
		if k, v, ok := strings.Cut(item, "\x01"); ok && k != "" {
			out[k] = v
		}
	}
	return out
}
