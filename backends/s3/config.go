package s3store

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sailtui/sailtui/engine"
)

// Defaults for Config's tuning fields. Together they set the memory bound of a Put,
// DefaultPartSize × DefaultConcurrency = 15 MiB, outside the Go heap (two parts in flight while
// a third fills keeps up with the archiver, and the whole archiving process stays under 64 MiB
// of resident memory), and the largest object, maxParts × DefaultPartSize ≈ 48.8 GiB (raise
// PartSize, S3_PART_SIZE, for more: the bound on memory grows with it).
const (
	DefaultRegion      = "us-east-1"
	DefaultPartSize    = minPartSize
	DefaultConcurrency = 3
)

// S3's own limits on multipart uploads.
const (
	minPartSize = 5 << 20
	maxPartSize = 5 << 30
	maxParts    = 10_000
	maxKeyLen   = 1024
)

// Config says which bucket a Store uses and how it talks to it.
type Config struct {
	Bucket string
	// Endpoint is the S3 API's base URL for S3-compatible servers (MinIO, versitygw, R2...);
	// empty means AWS itself.
	Endpoint string
	// Region defaults to AWS_REGION from the environment, then DefaultRegion.
	Region string
	// Prefix is put before every key ("prefix/key"); slashes around it are ignored.
	Prefix string
	// PathStyle addresses the bucket in the path (http://host/bucket/key) instead of the host
	// name, which most S3-compatible servers need.
	PathStyle bool
	// PartSize is the size of each multipart part (default DefaultPartSize, at least 5 MiB).
	PartSize int64
	// Concurrency is how many parts of one Put may be buffered or in flight at once (default
	// DefaultConcurrency): a Put holds at most PartSize × Concurrency bytes however large the
	// object. The bound is per Put, so that a project whose archive trickles in cannot hold up
	// the others' uploads; n concurrent Puts take up to n times as much.
	Concurrency int
	// Credentials, when set, replaces the SDK's default credential chain (environment, shared
	// files, SSO, IMDS...). Tests and embedders use it; the CLI leaves it nil.
	Credentials aws.CredentialsProvider
	// Logger receives what the SDK has to say (a credential source falling back, a skipped
	// check) at its level; nil drops it. Never the SDK's own writer to stderr: that would break
	// the headless mode's JSON log lines and draw over the console.
	Logger *slog.Logger
}

// ConfigFromEnv reads the S3 settings of the environment: S3_BUCKET_NAME, S3_ENDPOINT_URL,
// S3_REGION (falling back to AWS_REGION, then us-east-1), S3_PROJECTS_PREFIX and
// S3_FORCE_PATH_STYLE (default: true when an endpoint is set, since S3-compatible servers
// rarely serve virtual-hosted buckets). Credentials come from the standard AWS_* variables and
// files when New loads the default chain. ok is false when S3_BUCKET_NAME is unset: S3 is not
// configured, and the caller picks another store.
func ConfigFromEnv() (cfg Config, ok bool, err error) {
	cfg.Bucket = strings.TrimSpace(os.Getenv("S3_BUCKET_NAME"))
	if cfg.Bucket == "" {
		return Config{}, false, nil
	}
	cfg.Endpoint = strings.TrimSpace(os.Getenv("S3_ENDPOINT_URL"))
	cfg.Region = firstNonEmpty(os.Getenv("S3_REGION"), os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), DefaultRegion)
	cfg.Prefix = strings.Trim(strings.TrimSpace(os.Getenv("S3_PROJECTS_PREFIX")), "/")
	if v := strings.TrimSpace(os.Getenv("S3_PART_SIZE")); v != "" {
		n, perr := parseSize(v)
		if perr != nil || n < minPartSize || n > maxPartSize {
			return cfg, true, fmt.Errorf("s3 config: S3_PART_SIZE=%q: want a size from 5MiB to 5GiB such as 16MiB (an upload holds %d parts in memory; the largest archive is 10,000 parts)", v, DefaultConcurrency)
		}
		cfg.PartSize = n
	}
	cfg.PathStyle = cfg.Endpoint != ""
	if v := strings.TrimSpace(os.Getenv("S3_FORCE_PATH_STYLE")); v != "" {
		b, perr := strconv.ParseBool(v)
		if perr != nil {
			return cfg, true, fmt.Errorf("s3 config: S3_FORCE_PATH_STYLE=%q is not a boolean", v)
		}
		cfg.PathStyle = b
	}
	if err := cfg.validate(); err != nil {
		return cfg, true, err
	}
	return cfg, true, nil
}

// parseSize reads a byte count: a number, optionally followed by KiB, MiB or GiB (K, M, G
// and KB, MB, GB mean the same: part sizes are powers of two in practice).
func parseSize(v string) (int64, error) {
	num := strings.TrimRight(v, "KMGiBkmgb ")
	unit := strings.ToUpper(strings.TrimSpace(v[len(num):]))
	shift := 0
	switch strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I") {
	case "":
	case "K":
		shift = 10
	case "M":
		shift = 20
	case "G":
		shift = 30
	default:
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("not a size: %q", v)
	}
	return n << shift, nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// withDefaults fills the zero tuning fields.
func (c Config) withDefaults() Config {
	c.Prefix = strings.Trim(c.Prefix, "/")
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	return c
}

func (c Config) validate() error {
	if c.Bucket == "" {
		return fmt.Errorf("s3 config: no bucket (set S3_BUCKET_NAME)")
	}
	if strings.ContainsAny(c.Bucket, "/ ") {
		return fmt.Errorf("s3 config: bucket %q: a bucket name has no slashes or spaces", c.Bucket)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("s3 config: endpoint %q is not an http(s)://host[:port] URL", redactURL(c.Endpoint))
		}
	}
	if c.PartSize != 0 && (c.PartSize < minPartSize || c.PartSize > maxPartSize) {
		return fmt.Errorf("s3 config: part size %d outside S3's limits [%d, %d]", c.PartSize, minPartSize, int64(maxPartSize))
	}
	if c.Concurrency < 0 {
		return fmt.Errorf("s3 config: concurrency %d is negative", c.Concurrency)
	}
	if c.Prefix != "" {
		if err := engine.CheckKey(c.Prefix); err != nil {
			return fmt.Errorf("s3 config: prefix (S3_PROJECTS_PREFIX): %w; use slash-separated names such as sailtui/projects", err)
		}
	}
	return nil
}

// redactURL drops what may carry secrets (user info, query) from an endpoint shown to humans.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable endpoint)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
