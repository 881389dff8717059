package kafka

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests against a cluster (kfake) live in the integration module
// (integration/broker/kafka); these unit tests still check for leaks.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
