package awsconf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Kind is what an AWS error code says about a message.
type Kind int

const (
	// Retryable: a later try may succeed (a missing queue can be created,
	// an internal error passes).
	Retryable Kind = iota
	// Throttled: the service asks us to slow down. Retryable.
	Throttled
	// Unavailable: the service is not there for us (down, or refusing
	// our credentials): nothing about the message, the breaker's case.
	Unavailable
	// Permanent: the message is refused as it is written.
	Permanent
	// TooLarge: the message is over the service's size limit. Permanent.
	TooLarge
)

// authCodes are the codes of a request the service refused for its
// credentials or signature: every message fails alike until they are
// fixed, so they are the lane's outage, not the message's fault.
var authCodes = map[string]bool{
	"InvalidClientTokenId": true, "UnrecognizedClientException": true, "SignatureDoesNotMatch": true,
	"IncompleteSignature": true, "MissingAuthenticationToken": true, "ExpiredToken": true,
	"ExpiredTokenException": true, "AccessDenied": true, "AccessDeniedException": true,
	"AuthorizationError": true, "InvalidSecurity": true, "RequestExpired": true, "AuthFailure": true,
	"KMSAccessDeniedException": true, "KmsAccessDenied": true,
}

// permanentCodes are the codes of a message refused as it is written.
// Other client errors are retried (a queue or stream that does not exist
// yet, a stream being resharded, a KMS key disabled for now): the relay's
// max_attempts bounds them.
var permanentCodes = map[string]bool{
	"InvalidParameterValue": true, "InvalidParameterValueException": true, "InvalidParameter": true,
	"InvalidParameterException": true, "InvalidMessageContents": true, "InvalidAttributeName": true,
	"InvalidAttributeValue": true, "ValidationException": true, "ValidationError": true,
	"ParameterValueInvalid": true, "InvalidBatchEntryId": true, "UnsupportedOperation": true,
	"MessageTooLong": true, "BatchRequestTooLong": true, "RequestEntityTooLarge": true,
	"AWS.SimpleQueueService.UnsupportedOperation": true, "InvalidArgumentException": true,
	"MissingParameter": true,
}

// unavailableCodes say the service (or its region) cannot serve now.
var unavailableCodes = map[string]bool{
	"ServiceUnavailable": true, "ServiceUnavailableException": true,
}

// CodeKind sorts one error code and its message.
func CodeKind(code, message string) Kind {
	_, throttle := retry.DefaultThrottleErrorCodes[code]
	switch {
	case throttle || code == "KmsThrottled" || code == "KMSThrottlingException" ||
		code == "AWS.SimpleQueueService.RequestThrottled" || code == "OverLimit":
		return Throttled
	case authCodes[code]:
		return Unavailable
	case unavailableCodes[code]:
		return Unavailable
	case tooLarge(code, message):
		return TooLarge
	case permanentCodes[code]:
		return Permanent
	}
	return Retryable
}

// tooLarge reports whether an error says the message is over the size
// limit: the codes that mean only that, or a validation error whose
// message says so (SQS: "Message must be shorter than 262144 bytes";
// Kinesis: "Member must have length less than or equal to 1048576").
func tooLarge(code, message string) bool {
	switch code {
	case "MessageTooLong", "BatchRequestTooLong", "RequestEntityTooLarge", "KinesisRequestEntityTooLarge":
		return true
	}
	m := strings.ToLower(message)
	return permanentCodes[code] && (strings.Contains(m, "must be shorter than") || strings.Contains(m, "too long") ||
		strings.Contains(m, "length less than or equal to") || strings.Contains(m, "too large"))
}

// Wrap marks err as kind says (what names the message for TooLarge).
func Wrap(kind Kind, err error) error {
	switch kind {
	case Unavailable:
		return herald.Unavailable(err)
	case Permanent:
		return herald.Permanent(err)
	case TooLarge:
		return herald.Permanent(fmt.Errorf("%w: %w", herald.ErrPayloadTooLarge, err))
	}
	return err
}

// Request sorts the error of a whole request (a batch send, a ping): an
// error the service sent back by its code and HTTP status; no answer at
// all by whether the request can have reached the service (a refused
// connection cannot: unavailable; a reset or a timeout after sending may
// have: unavailable and ambiguous; the caller's deadline: ambiguous).
func Request(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		kind := CodeKind(api.ErrorCode(), api.ErrorMessage())
		var re *awshttp.ResponseError
		if kind == Retryable && errors.As(err, &re) && gateway(re.HTTPStatusCode()) {
			kind = Unavailable
		}
		if kind == Retryable && api.ErrorFault() != smithy.FaultClient {
			// A server fault: it may have stored some of the request.
			return herald.Ambiguous(err)
		}
		return Wrap(kind, err)
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		// An answer the SDK could not read as an error of the service: a
		// proxy's, a load balancer's. (Status 0: no answer at all.)
		if gateway(re.HTTPStatusCode()) {
			return herald.Unavailable(err)
		}
		return herald.Ambiguous(err)
	}
	switch {
	case neverSent(err):
		return herald.Unavailable(err)
	case broker.Unreachable(err):
		return herald.Unavailable(herald.Ambiguous(err))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return herald.Ambiguous(err)
	}
	return herald.Ambiguous(err)
}

// gateway reports whether an HTTP status says the service is not there.
func gateway(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// neverSent reports whether err is a failure to connect: the request
// cannot have reached the service.
func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// Reachable reports whether err says the service answered (any error it
// sent back) and accepts our credentials, for pings: a refusal of the
// ping's own action (no permission to list queues) still proves that.
func Reachable(err error) bool {
	if err == nil {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "AccessDenied", "AccessDeniedException", "AuthorizationError":
			return true // the ping's own action is not permitted
		}
		return CodeKind(api.ErrorCode(), api.ErrorMessage()) != Unavailable
	}
	return false
}

// PingResult is a ping's verdict on the error of its call: nil when the
// service answered (see Reachable), else the error as unavailable.
func PingResult(service string, err error) error {
	if Reachable(err) {
		return nil
	}
	return herald.Unavailable(fmt.Errorf("%s: ping: %w", service, err))
}

// AllFailed returns n results failing with err (a publisher closed).
func AllFailed(n int, err error) []broker.Result {
	res := make([]broker.Result, n)
	for i := range res {
		res[i].Err = err
	}
	return res
}
