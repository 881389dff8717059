package awsconf

import (
	"strings"
	"testing"
)

// Rule: a bad key is named first in the error.
func TestValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		s   Settings
		p   Publishing
		key string
	}{
		{s: Settings{Endpoint: "ftp://x"}, key: "endpoint:"},
		{s: Settings{Endpoint: "127.0.0.1:4566"}, key: "endpoint:"},
		{s: Settings{AccessKeyID: "a"}, key: "secret_access_key:"},
		{s: Settings{SecretAccessKey: "b"}, key: "access_key_id:"},
		{p: Publishing{MaxPayload: -1}, key: "max_payload:"},
		{p: Publishing{MaxPayload: 2 << 20}, key: "max_payload:"},
		{p: Publishing{Parallel: -1}, key: "parallel:"},
	} {
		err := tc.s.Validate()
		if err == nil {
			err = tc.p.Validate("SQS", 1<<20)
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.key) {
			t.Errorf("%+v %+v: %v, want an error starting with %s", tc.s, tc.p, err, tc.key)
		}
	}
	if err := (Settings{Endpoint: "http://127.0.0.1:4566", AccessKeyID: "a", SecretAccessKey: "b"}).Validate(); err != nil {
		t.Errorf("valid settings: %v", err)
	}
	if r := (Settings{SecretAccessKey: "s3cret"}).Redacted(); r.SecretAccessKey == "s3cret" {
		t.Error("Redacted kept the secret")
	}
}
