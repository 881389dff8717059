package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// AWS test credentials and region: the emulators accept any.
const (
	AWSRegion    = "us-east-1"
	AWSAccessKey = "test"
	AWSSecretKey = "test"
)

// NoAWSMetadata keeps the AWS SDK of a test process from asking the EC2
// instance metadata service (a link-local address off this machine) for
// credentials or a region: tests reach loopback only.
func NoAWSMetadata() {
	_ = os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// NoAWSCredentials empties the AWS SDK's standard chain for the test: no
// credentials or region in the environment, no shared files, no instance
// metadata.
func NoAWSCredentials(t testing.TB) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}
