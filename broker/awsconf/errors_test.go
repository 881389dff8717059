package awsconf

import (
	"errors"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald"
)

// Rule: AWS codes sort into throttled, unavailable, permanent, too large
// and retryable as docs/brokers.md says.
func TestCodeKind(t *testing.T) {
	for code, want := range map[string]Kind{
		"ThrottlingException": Throttled, "RequestThrottled": Throttled, "ProvisionedThroughputExceededException": Throttled,
		"KmsThrottled": Throttled, "Throttling": Throttled,
		"InvalidClientTokenId": Unavailable, "ExpiredToken": Unavailable, "AccessDenied": Unavailable,
		"ServiceUnavailable":    Unavailable,
		"InvalidParameterValue": Permanent, "InvalidMessageContents": Permanent, "ValidationException": Permanent,
		"BatchRequestTooLong": TooLarge, "QueueDoesNotExist": Retryable, "ResourceNotFoundException": Retryable,
		"ResourceInUseException": Retryable, "InternalError": Retryable,
	} {
		if got := CodeKind(code, "some message"); got != want {
			t.Errorf("%s: %v, want %v", code, got, want)
		}
	}
	if got := CodeKind("InvalidParameterValue", "Message must be shorter than 262144 bytes."); got != TooLarge {
		t.Errorf("too long message: %v", got)
	}
	if got := CodeKind("ValidationException", "Member must have length less than or equal to 1048576"); got != TooLarge {
		t.Errorf("too large record: %v", got)
	}
}

// Rule: a service's error of a request is wrapped as its code says; a
// server fault is ambiguous; the ping treats a refusal of its own action
// as reachable, refused credentials not.
func TestRequestAndReachable(t *testing.T) {
	api := func(code string, fault smithy.ErrorFault) error {
		return &smithy.OperationError{ServiceID: "SQS", OperationName: "X", Err: &smithy.GenericAPIError{Code: code, Fault: fault}}
	}
	if err := Request(api("ThrottlingException", smithy.FaultClient)); herald.IsPermanent(err) || herald.IsUnavailable(err) {
		t.Errorf("throttled: %v", err)
	}
	if err := Request(api("InternalError", smithy.FaultServer)); !herald.IsAmbiguous(err) {
		t.Errorf("server fault: %v", err)
	}
	if err := Request(api("InvalidParameterValue", smithy.FaultClient)); !herald.IsPermanent(err) {
		t.Errorf("invalid: %v", err)
	}
	if !Reachable(api("AccessDenied", smithy.FaultClient)) || Reachable(api("InvalidClientTokenId", smithy.FaultClient)) ||
		Reachable(errors.New("dial tcp: connection refused")) {
		t.Error("Reachable sorts wrongly")
	}
}
