package sqs

import "encoding/json"

// snsNotification is the JSON envelope SNS wraps a message in when it
// delivers to an SQS queue without raw message delivery.
type snsNotification struct {
	Type              string `json:"Type"`
	TopicArn          string `json:"TopicArn"`
	Message           string `json:"Message"`
	MessageAttributes map[string]struct {
		Type  string `json:"Type"`
		Value string `json:"Value"`
	} `json:"MessageAttributes"`
}

// snsEnvelope returns the message and attributes an SNS notification body
// carries, or false when body is not one.
func snsEnvelope(body string) (map[string]string, string, bool) {
	if len(body) == 0 || body[0] != '{' {
		return nil, "", false
	}
	var n snsNotification
	if json.Unmarshal([]byte(body), &n) != nil || n.Type != "Notification" || n.TopicArn == "" {
		return nil, "", false
	}
	attrs := make(map[string]string, len(n.MessageAttributes))
	for k, v := range n.MessageAttributes {
		attrs[k] = v.Value
	}
	return attrs, n.Message, true
}
