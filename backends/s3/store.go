// Package s3store is the engine.ObjectStore kept in an S3 bucket (AWS or any S3-compatible
// server), on aws-sdk-go-v2. Puts stream through a multipart upload with a fixed number of
// part buffers, so memory stays bounded whatever the size of the archive, and a Put that fails
// or is cancelled aborts its upload: nothing ever appears under the key.
package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"

	"github.com/sailtui/sailtui/engine"
)

// Retry and timeout policy. Each SDK call makes up to maxAttempts attempts on throttling, 5xx
// and connection errors, sleeping a jittered exponential backoff from baseDelay (the SDK's
// 50 ms would give up on a server that restarts in a second) capped at maxBackoff: a dead
// server fails a call within about 4 s of sleeping (throttling: 1 s base, up to ~13 s)
// instead of hanging, and a blip is ridden out.
const (
	maxAttempts = 5
	baseDelay   = 250 * time.Millisecond
	maxBackoff  = 4 * time.Second
	dialTimeout = 10 * time.Second
	// readTimeout fails a connection that stays silent this long (the SDK leaves S3 without
	// one): a hung server must not hang a sweep. It also bounds the upload of one part, so it
	// is generous enough for a slow link to send PartSize bytes.
	readTimeout = 3 * time.Minute
)

// Store is an engine.ObjectStore on one bucket, under an optional key prefix.
type Store struct {
	client *s3.Client
	bucket string
	prefix string // without slashes around it; "" for none
	where  string // endpoint or region, for Describe
	// A Put's part buffers: concurrency of partSize bytes.
	partSize    int64
	concurrency int
	// maxParts is S3's limit on the parts of one upload (a field so tests can lower it).
	maxParts int
	// checksum is what multipart parts carry; "" where the configuration asks for checksums
	// only when required (AWS_REQUEST_CHECKSUM_CALCULATION=when_required), which is the way
	// out for S3-compatible servers that refuse them.
	checksum types.ChecksumAlgorithm
	// payloadOptions go with every call that uploads data (see unsignedPayload).
	payloadOptions []func(*s3.Options)
	// leftoverMinAge is LeftoverMinAge (a field so tests can lower it).
	leftoverMinAge time.Duration
}

var _ engine.ObjectStore = (*Store)(nil)

// New connects to cfg's bucket and checks that it exists and is reachable with the
// credentials found: a missing bucket or wrong credentials are configuration errors to report
// before anything is archived.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.MaxBackoff = maxBackoff
				o.BaseDelay = baseDelay
				o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(retryDirectoryRace))
			})
		}),
		config.WithHTTPClient(awshttp.NewBuildableClient().
			WithDialerOptions(func(d *net.Dialer) { d.Timeout = dialTimeout }).
			WithTransportOptions(func(tr *http.Transport) {
				// Keep a connection per part in flight (plus Gets) alive between parts.
				tr.MaxIdleConnsPerHost = max(awshttp.DefaultHTTPTransportMaxIdleConnsPerHost, 2*cfg.Concurrency)
			}).
			WithReadTimeout(readTimeout)),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	opts = append(opts, config.WithLogger(sdkLogger(cfg.Logger)))
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// Objects put in parts carry a checksum of checksums that the SDK cannot check on
		// a GET; it would log a warning for each one. The archive has its own SHA-256.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	s := &Store{
		client:         client,
		bucket:         cfg.Bucket,
		prefix:         cfg.Prefix,
		partSize:       cfg.PartSize,
		concurrency:    cfg.Concurrency,
		maxParts:       maxParts,
		leftoverMinAge: LeftoverMinAge,
	}
	if awsCfg.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired {
		s.checksum = types.ChecksumAlgorithmCrc32
		s.payloadOptions = []func(*s3.Options){unsignedPayload}
	}
	if cfg.Endpoint != "" {
		s.where = redactURL(cfg.Endpoint)
	} else {
		s.where = "aws " + awsCfg.Region
	}
	// Asked first and apart, so that a machine without credentials hears that, not an error
	// from deep in the SDK's chain (which ends with the EC2 metadata service).
	if awsCfg.Credentials != nil {
		if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
			return nil, fmt.Errorf("s3: no usable AWS credentials for bucket %q (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE; in a cluster, an IAM role for the service account): %w", cfg.Bucket, err)
		}
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
		return nil, bucketError(cfg.Bucket, s.where, awsCfg.Region, err)
	}
	return s, nil
}

// sdkLogger passes the SDK's messages to l: warnings as warnings, the rest at debug level.
func sdkLogger(l *slog.Logger) logging.Logger {
	if l == nil {
		return logging.Nop{}
	}
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		level := slog.LevelDebug
		if c == logging.Warn {
			level = slog.LevelWarn
		}
		l.Log(context.Background(), level, "s3: "+fmt.Sprintf(format, v...))
	})
}

// unsignedPayload leaves the data of an upload out of its signature, as the SDK itself does
// over HTTPS. Over plain HTTP (an S3-compatible server on the same host or network) the SDK
// would otherwise hash every part with SHA-256 for the signature, and the server hash it again
// to check it: on a small machine the two hashes cost as much CPU as compressing the archive.
// Nothing is given up: every part still carries its CRC32, which the server checks, the
// request headers stay signed, and the archive's own SHA-256 is verified on read-back before a
// snapshot is ready and again on every restore. It is used only with those part checksums on
// (not with AWS_REQUEST_CHECKSUM_CALCULATION=when_required, where the signature is the only
// check the server makes on the data).
func unsignedPayload(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		// First in Finalize: the checksum middleware, which runs next, then computes the CRC32
		// alone instead of the CRC32 and the SHA-256 together.
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("sailtuiUnsignedPayload",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				return next.HandleFinalize(v4.SetPayloadHash(ctx, "UNSIGNED-PAYLOAD"), in)
			}), middleware.Before)
	})
}

// retryDirectoryRace retries ExistingObjectIsDirectory. Servers that keep objects as files
// (versitygw's posix backend) prune the directories a delete leaves empty, and a put racing
// with that in the same "directory" fails with this code although nothing is in the way; the
// next attempt succeeds. When a key really is a directory (another key extends it), the
// attempts run out and the error stands.
func retryDirectoryRace(err error) aws.Ternary {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "ExistingObjectIsDirectory" {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
}

// bucketError explains why a bucket cannot be used, naming it.
func bucketError(bucket, where, region string, err error) error {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotFound:
			return fmt.Errorf("s3: bucket %q does not exist at %s (create it, or fix S3_BUCKET_NAME / S3_ENDPOINT_URL): %w", bucket, where, err)
		case http.StatusForbidden:
			return fmt.Errorf("s3: access to bucket %q at %s denied (check the AWS credentials and the bucket policy): %w", bucket, where, err)
		case http.StatusMovedPermanently:
			// AWS names the bucket's region in a header of the redirect.
			if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" {
				return fmt.Errorf("s3: bucket %q is in region %s, not %s (set S3_REGION=%s): %w", bucket, r, region, r, err)
			}
			return fmt.Errorf("s3: bucket %q is in another region than %s (set S3_REGION): %w", bucket, region, err)
		case http.StatusBadRequest:
			// S3-compatible servers answer a request signed for another region this way.
			return fmt.Errorf("s3: %s refused the request for bucket %q as malformed; a region other than the server's is the usual cause (S3_REGION is %s): %w", where, bucket, region, err)
		}
	}
	return fmt.Errorf("s3: check bucket %q at %s: %w", bucket, where, err)
}

// Describe implements engine.ObjectStore: "s3://bucket/prefix (endpoint)", never credentials.
func (s *Store) Describe() string {
	if s.prefix == "" {
		return fmt.Sprintf("s3://%s (%s)", s.bucket, s.where)
	}
	return fmt.Sprintf("s3://%s/%s (%s)", s.bucket, s.prefix, s.where)
}

// objectKey is the S3 key of an object key: the prefix and the key.
func (s *Store) objectKey(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

// fullKey checks key and returns its S3 key. Keys follow dirstore's rules (slash-separated
// plain names: no empty, "." or ".." components, no NUL) although S3 itself would take them:
// that keeps an archive location valid in every ObjectStore, and keeps S3-compatible servers
// that map keys to files (versitygw, MinIO) from refusing or reinterpreting them.
func (s *Store) fullKey(key string) (string, error) {
	if err := engine.CheckKey(key); err != nil {
		return "", err
	}
	full := s.objectKey(key)
	if len(full) > maxKeyLen {
		return "", fmt.Errorf("key %q: %d bytes with the prefix, S3 allows %d: %w", key, len(full), maxKeyLen, engine.ErrBadPath)
	}
	return full, nil
}

// Get implements engine.ObjectStore. The object is streamed; if the connection breaks part
// way, reading resumes from where it stopped (a ranged GET pinned to the same ETag), so a
// multi-gigabyte restore survives a reset connection.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	full, err := s.fullKey(key)
	if err != nil {
		return nil, fmt.Errorf("s3: get %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("s3: get %q: %w", key, err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &full})
	if err != nil {
		return nil, fmt.Errorf("s3: get %q: %w", key, mapNotFound(err))
	}
	return &objectReader{
		ctx:  ctx,
		s:    s,
		key:  key,
		full: full,
		body: out.Body,
		etag: aws.ToString(out.ETag),
		size: aws.ToInt64(out.ContentLength),
	}, nil
}

// Head implements engine.ObjectStore.
func (s *Store) Head(ctx context.Context, key string) (engine.ObjectInfo, error) {
	full, err := s.fullKey(key)
	if err != nil {
		return engine.ObjectInfo{}, fmt.Errorf("s3: head %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return engine.ObjectInfo{}, fmt.Errorf("s3: head %q: %w", key, err)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &full})
	if err != nil {
		return engine.ObjectInfo{}, fmt.Errorf("s3: head %q: %w", key, mapNotFound(err))
	}
	return engine.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified).UTC()}, nil
}

// Delete implements engine.ObjectStore. S3 answers a delete of a missing key with success
// already; a server that says NoSuchKey instead is treated the same.
func (s *Store) Delete(ctx context.Context, key string) error {
	full, err := s.fullKey(key)
	if err != nil {
		return fmt.Errorf("s3: delete %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("s3: delete %q: %w", key, err)
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &full}); err != nil && !isNotFound(err) {
		return fmt.Errorf("s3: delete %q: %w", key, err)
	}
	return nil
}

// List implements engine.ObjectStore: every object whose key starts with prefix (a plain
// string prefix), sorted by key.
func (s *Store) List(ctx context.Context, prefix string) ([]engine.ObjectInfo, error) {
	fail := func(err error) ([]engine.ObjectInfo, error) {
		return nil, fmt.Errorf("s3: list %q: %w", prefix, err)
	}
	if strings.HasPrefix(prefix, "/") || strings.IndexByte(prefix, 0) >= 0 || strings.IndexByte(prefix, '\\') >= 0 || !utf8.ValidString(prefix) {
		return fail(engine.ErrBadPath)
	}
	// The directories the prefix names in full must be usable in a key, as in dirstore.
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		if _, err := s.fullKey(prefix[:i]); err != nil {
			return fail(err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	full := s.objectKey(prefix)
	var out []engine.ObjectInfo
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &full})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fail(err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			rel, ok := strings.CutPrefix(k, full)
			// Keys ending in "/" are directory markers (some S3-compatible servers list the
			// directories of a file-backed bucket as such); no key of ours has that form.
			if !ok || strings.HasSuffix(k, "/") {
				continue
			}
			out = append(out, engine.ObjectInfo{Key: prefix + rel, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified).UTC()})
		}
	}
	// S3 lists in UTF-8 byte order already; servers backed by a filesystem may not.
	slices.SortFunc(out, func(a, b engine.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// isNotFound recognises the answers for a missing object: NoSuchKey (GET, DELETE on some
// servers) and NotFound (HEAD, which has no body to carry a code).
func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		}
	}
	return false
}

// mapNotFound makes a missing-object error also match engine.ErrNotFound, keeping the SDK's
// error inspectable.
func mapNotFound(err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%w: %w", engine.ErrNotFound, err)
	}
	return err
}
