// Package awsconf is what the AWS adapters (broker/sqs, broker/sns,
// broker/kinesis) share: the connection keys of a broker entry (Settings,
// which their configs embed), loading an aws.Config from them and the
// standard chain, and sorting the errors the services send back into
// Herald's retryable, permanent and unavailable.
package awsconf

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awscfg "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/redact"
)

// Settings are the keys every AWS broker entry has. Left empty, region,
// profile and credentials come from the SDK's standard chain: AWS_REGION,
// AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the shared config
// and credentials files, web identity, the container and instance roles.
type Settings struct {
	// Region is the AWS region ("eu-west-1"). Defaults to the chain's
	// (AWS_REGION, the profile's region).
	Region string `yaml:"region,omitempty"`
	// Endpoint replaces the service's endpoint: a LocalStack, ElasticMQ or
	// test server ("http://127.0.0.1:4566"). Empty: the region's.
	Endpoint string `yaml:"endpoint,omitempty"`
	// Profile is the shared config profile. Defaults to AWS_PROFILE, then
	// "default".
	Profile string `yaml:"profile,omitempty"`
	// AccessKeyID and SecretAccessKey are static credentials, both or
	// neither; they replace the chain (for LocalStack's "test"/"test").
	AccessKeyID     string `yaml:"access_key_id,omitempty"`
	SecretAccessKey string `yaml:"secret_access_key,omitempty"`
}

// Validate checks the keys that need no AWS call, naming the one at fault.
func (s Settings) Validate() error {
	if s.Endpoint != "" {
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("endpoint: want http(s)://host:port, got %q", s.Endpoint)
		}
	}
	switch {
	case s.AccessKeyID != "" && s.SecretAccessKey == "":
		return errors.New("secret_access_key: is required with access_key_id")
	case s.AccessKeyID == "" && s.SecretAccessKey != "":
		return errors.New("access_key_id: is required with secret_access_key")
	}
	return nil
}

// Redacted returns s with the secret key hidden.
func (s Settings) Redacted() Settings {
	s.SecretAccessKey = redact.IfSet(s.SecretAccessKey)
	return s
}

// Where says where the service is reached, for `herald run` to print:
// the endpoint, or the region.
func (s Settings) Where(cfg aws.Config) string {
	if s.Endpoint != "" {
		return s.Endpoint
	}
	return "region " + cfg.Region
}

// credentialsTimeout bounds finding credentials at start (a web identity
// or role lookup is a network call).
const credentialsTimeout = 10 * time.Second

// Conn is an aws.Config with an HTTP transport of its own, whose idle
// connections Close releases (an adapter's Close leaves none behind).
type Conn struct {
	aws.Config
	transport *http.Transport
}

// Close closes the connections the clients on c keep open.
func (c Conn) Close() { c.transport.CloseIdleConnections() }

// Load returns the aws.Config of s over the standard chain, with the SDK's
// own retries limited to attempts (1: none; Herald's retry policy and
// breaker decide). It fails with a *broker.ConfigError naming the key to
// set when no region or no credentials can be found: the relay cannot do
// anything useful without them.
func (s Settings) Load(ctx context.Context, attempts int) (Conn, error) {
	opts := []func(*awscfg.LoadOptions) error{
		awscfg.WithRetryer(func() aws.Retryer {
			if attempts <= 1 {
				return aws.NopRetryer{}
			}
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = attempts })
		}),
	}
	if s.Region != "" {
		opts = append(opts, awscfg.WithRegion(s.Region))
	}
	if s.Profile != "" {
		opts = append(opts, awscfg.WithSharedConfigProfile(s.Profile))
	}
	if s.AccessKeyID != "" {
		opts = append(opts, awscfg.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(s.AccessKeyID, s.SecretAccessKey, "")))
	}
	if s.Endpoint != "" {
		opts = append(opts, awscfg.WithBaseEndpoint(s.Endpoint))
	}
	cfg, err := awscfg.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return Conn{}, &broker.ConfigError{Key: "profile", Err: fmt.Errorf("loading the AWS configuration: %w", err)}
	}
	if cfg.Region == "" {
		return Conn{}, &broker.ConfigError{Key: "region",
			Err: errors.New("no AWS region: set it here or in AWS_REGION (or the profile's region)")}
	}
	cctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	if _, err := cfg.Credentials.Retrieve(cctx); err != nil {
		return Conn{}, &broker.ConfigError{Key: "access_key_id", Err: fmt.Errorf(
			"no AWS credentials found (set access_key_id and secret_access_key, AWS_ACCESS_KEY_ID and "+
				"AWS_SECRET_ACCESS_KEY, a profile, or run with a role): %w", err)}
	}
	// A transport of its own (with the CA bundle the chain may have set
	// on the SDK's client), so that Close can release its connections.
	bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		bc = awshttp.NewBuildableClient()
	}
	tr := bc.GetTransport()
	cfg.HTTPClient = &http.Client{Transport: tr}
	return Conn{Config: cfg, transport: tr}, nil
}
