package pubsub

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/heraldhq/herald/broker"
)

// Config configures a Publisher.
type Config struct {
	// Project is the Google Cloud project id of the topics. Required.
	Project string `yaml:"project"`
	// EmulatorHost is the host:port of the Pub/Sub emulator (or an
	// in-process fake): plaintext gRPC, no credentials. Defaults to
	// PUBSUB_EMULATOR_HOST, as Google's clients do; empty means Google
	// Cloud, reached with CredentialsFile or the standard chain.
	EmulatorHost string `yaml:"emulator_host"`
	// CredentialsFile is a service account key (or any credentials JSON
	// of the Application Default Credentials chain). Empty means the
	// chain: GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, then the
	// metadata server on Google Cloud.
	CredentialsFile string `yaml:"credentials_file"`
	// Endpoint overrides Pub/Sub's endpoint (a regional one,
	// "europe-west1-pubsub.googleapis.com:443"); TLS and credentials apply.
	Endpoint string `yaml:"endpoint"`
	// OrderingKeys publishes with the partition key as ordering key: the
	// subscriptions with message ordering get one key's messages in order.
	// Give a lane that needs no order a broker entry with it off: an
	// ordering key's messages go one request at a time. Default true.
	OrderingKeys *bool `yaml:"ordering_keys"`
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string `yaml:"source"`
	// MaxPayload is the largest payload accepted; larger is a permanent
	// error. Defaults to DefaultMaxPayload (Pub/Sub's 10 MB request less
	// room for the attributes).
	MaxPayload int `yaml:"max_payload"`
	// PublishDelay is how long the client waits to fill a request with
	// more messages of a batch. Defaults to 1ms.
	PublishDelay time.Duration `yaml:"publish_delay"`
}

// Defaults and limits.
const (
	DefaultMaxPayload   = 9 << 20
	DefaultPublishDelay = time.Millisecond
	// MaxRequestBytes is Pub/Sub's limit on one publish request.
	MaxRequestBytes = 10_000_000
)

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.EmulatorHost == "" {
		c.EmulatorHost = os.Getenv("PUBSUB_EMULATOR_HOST")
	}
	if c.OrderingKeys == nil {
		on := true
		c.OrderingKeys = &on
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.PublishDelay == 0 {
		c.PublishDelay = DefaultPublishDelay
	}
	return c
}

// ordering reports whether messages carry ordering keys.
func (c Config) ordering() bool { return c.OrderingKeys == nil || *c.OrderingKeys }

// Validate checks the fields after defaults, naming the one at fault.
// Outside the emulator it checks that credentials can be found, without
// asking the network: a missing credential is the configuration's fault,
// said at start.
func (c Config) Validate() error {
	switch {
	case c.Project == "":
		return fmt.Errorf("pubsub: project: required (the Google Cloud project id)")
	case c.MaxPayload < 0:
		return fmt.Errorf("pubsub: max_payload: must be positive, got %d", c.MaxPayload)
	case c.MaxPayload > MaxRequestBytes:
		return fmt.Errorf("pubsub: max_payload: %d is over Pub/Sub's request limit (%d bytes)", c.MaxPayload, MaxRequestBytes)
	case c.PublishDelay < 0:
		return fmt.Errorf("pubsub: publish_delay: must be positive, got %s", c.PublishDelay)
	}
	if c.EmulatorHost != "" {
		if _, _, err := net.SplitHostPort(c.EmulatorHost); err != nil {
			return fmt.Errorf("pubsub: emulator_host: want host:port, got %q", c.EmulatorHost)
		}
		return nil
	}
	return c.checkCredentials()
}

// checkCredentials finds the credentials the client will use, without a
// network call: credentials_file, GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// ADC file, or a machine that says it runs on Google Cloud (where the
// metadata server gives them).
func (c Config) checkCredentials() error {
	if c.CredentialsFile != "" {
		_, err := credentialsType(c.CredentialsFile)
		return err
	}
	if f := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); f != "" {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("pubsub: credentials_file: not set, and GOOGLE_APPLICATION_CREDENTIALS names a file that cannot be read: %v", err)
		}
		return nil
	}
	if fileExists(gcloudADCFile()) || onGoogleCloud() {
		return nil
	}
	return fmt.Errorf("pubsub: credentials_file: no Google Cloud credentials found: set credentials_file or " +
		"GOOGLE_APPLICATION_CREDENTIALS to a service account key, run `gcloud auth application-default login`, " +
		"run on Google Cloud (metadata server), or set emulator_host for the emulator")
}

// gcloudADCFile is where `gcloud auth application-default login` writes.
func gcloudADCFile() string {
	if d := os.Getenv("CLOUDSDK_CONFIG"); d != "" {
		return filepath.Join(d, "application_default_credentials.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
}

func fileExists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// onGoogleCloud reports what the machine says of itself, without asking
// the metadata server: GCE_METADATA_HOST set (GKE, Cloud Run and tests
// set it), or a Google BIOS (Compute Engine, GKE nodes).
func onGoogleCloud() bool {
	if os.Getenv("GCE_METADATA_HOST") != "" {
		return true
	}
	b, err := os.ReadFile("/sys/class/dmi/id/product_name")
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "Google")
}

// clientOptions are the options of the Pub/Sub client: the emulator
// without credentials, or Google Cloud with the configured ones.
func (c Config) clientOptions() []option.ClientOption {
	if c.EmulatorHost != "" {
		return []option.ClientOption{option.WithEndpoint(c.EmulatorHost), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	}
	var opts []option.ClientOption
	if c.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(c.Endpoint))
	}
	if c.CredentialsFile != "" {
		// Validate read the type; a file changed since fails at the first call.
		typ, _ := credentialsType(c.CredentialsFile)
		opts = append(opts, option.WithAuthCredentialsFile(typ, c.CredentialsFile))
	}
	return opts
}

// credentialsType reads the "type" of a credentials JSON file.
func credentialsType(path string) (option.CredentialsType, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("pubsub: credentials_file: %v", err)
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return "", fmt.Errorf("pubsub: credentials_file: %s is not a credentials JSON file: %v", path, err)
	}
	for _, t := range []option.CredentialsType{option.ServiceAccount, option.AuthorizedUser,
		option.ImpersonatedServiceAccount, option.ExternalAccount} {
		if f.Type == string(t) {
			return t, nil
		}
	}
	return "", fmt.Errorf("pubsub: credentials_file: %s has type %q; want service_account, authorized_user, impersonated_service_account or external_account", path, f.Type)
}

// endpoint says where the client goes, for `herald run` to print.
func (c Config) endpoint() string {
	switch {
	case c.EmulatorHost != "":
		return "Pub/Sub emulator at " + c.EmulatorHost + ", project " + c.Project
	case c.Endpoint != "":
		return "Google Cloud Pub/Sub at " + c.Endpoint + ", project " + c.Project
	}
	return "Google Cloud Pub/Sub, project " + c.Project
}

// pingTimeout bounds a Ping when its context has no deadline.
const pingTimeout = 5 * time.Second

// withPingTimeout gives ctx a deadline if it has none.
func withPingTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, pingTimeout)
}
