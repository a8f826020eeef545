package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/sailtui/sailtui/backends/s3/s3test"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
	"github.com/sailtui/sailtui/engine/archive/offheap"
	"github.com/sailtui/sailtui/engine/objectstoretest"
)

func testConfig(srv *s3test.Server, prefix string) Config {
	return Config{
		Bucket:      srv.Bucket,
		Endpoint:    srv.Endpoint,
		Region:      srv.Region,
		Prefix:      prefix,
		PathStyle:   true,
		Credentials: srv.Credentials(),
	}
}

func open(t testing.TB, srv *s3test.Server, prefix string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, testConfig(srv, prefix))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestContract(t *testing.T) {
	srv := s3test.Start(t)
	objectstoretest.Run(t, func(t *testing.T) engine.ObjectStore { return open(t, srv, "") })
}

func TestContractWithPrefix(t *testing.T) {
	srv := s3test.Start(t)
	objectstoretest.Run(t, func(t *testing.T) engine.ObjectStore { return open(t, srv, "/tenant-a/projects/") })
}

// TestPrefixIsolates checks that a store sees only its own prefix and writes only below it.
func TestPrefixIsolates(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	a, b, root := open(t, srv, "a"), open(t, srv, "ab"), open(t, srv, "")
	if _, err := a.Put(ctx, "k", strings.NewReader("in a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", strings.NewReader("in ab")); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, a, ""); !slices.Equal(got, []string{"k"}) {
		t.Errorf("store a lists %v", got)
	}
	if got := keysOf(t, root, ""); !slices.Equal(got, []string{"a/k", "ab/k"}) {
		t.Errorf("unprefixed store lists %v", got)
	}
	if _, err := b.Head(ctx, "b/k"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Head across prefixes: %v", err)
	}
	if got, want := a.Describe(), "s3://"+srv.Bucket+"/a ("+srv.Endpoint+")"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	if got, want := root.Describe(), "s3://"+srv.Bucket+" ("+srv.Endpoint+")"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}

func keysOf(t *testing.T, s *Store, prefix string) []string {
	t.Helper()
	infos, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	var out []string
	for _, i := range infos {
		out = append(out, i.Key)
	}
	return out
}

func TestKeysRejected(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "p")
	ctx := context.Background()
	long := strings.Repeat("x", maxKeyLen)
	for _, key := range []string{"", "/abs", "a//b", "a/", "../x", "a/../../x", "./a", "a/.", "a\x00b", `a\b`, "\xff", long} {
		if _, err := s.Put(ctx, key, strings.NewReader("x")); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Put(%q) error = %v, want ErrBadPath", key, err)
		}
		if _, err := s.Head(ctx, key); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Head(%q) error = %v, want ErrBadPath", key, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Get(%q) error = %v, want ErrBadPath", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Delete(%q) error = %v, want ErrBadPath", key, err)
		}
	}
	for _, prefix := range []string{"/", "../", "a/../../", "a//"} {
		if _, err := s.List(ctx, prefix); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("List(%q) error = %v, want ErrBadPath", prefix, err)
		}
	}
	if got := keysOf(t, open(t, srv, ""), ""); len(got) != 0 {
		t.Errorf("something was stored: %v", got)
	}
}

func TestMissingBucket(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(srv, "")
	cfg.Bucket = "no-such-bucket-here"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := New(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), `"no-such-bucket-here"`) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("New with a missing bucket: %v; want an error naming the bucket", err)
	}
	cfg = testConfig(srv, "")
	cfg.Credentials = s3test.Start(t).Credentials() // another server's keys
	if _, err := New(ctx, cfg); err == nil || !strings.Contains(err.Error(), srv.Bucket) {
		t.Fatalf("New with wrong credentials: %v; want an error naming the bucket", err)
	}
	cfg = testConfig(srv, "")
	cfg.Region = "eu-west-3" // the server is in s3test.Region
	if _, err := New(ctx, cfg); err == nil || !strings.Contains(err.Error(), "S3_REGION is eu-west-3") {
		t.Fatalf("New with another region than the server's: %v; want an error pointing at S3_REGION", err)
	}
	cfg = testConfig(srv, "")
	cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no credentials anywhere")
	})
	if _, err := New(ctx, cfg); err == nil || !strings.Contains(err.Error(), "no usable AWS credentials") || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("New without credentials: %v; want an error saying how to provide them", err)
	}
}

// The SDK's messages reach the configured logger, never the SDK's own writer (stderr, where
// they would break the headless mode's JSON lines).
func TestSDKLogger(t *testing.T) {
	var logged bytes.Buffer
	l := sdkLogger(slog.New(slog.NewJSONHandler(&logged, nil)))
	l.Logf(logging.Warn, "falling back to %s", "IMDSv1")
	l.Logf(logging.Debug, "request %d", 1) // below the handler's level
	var line struct{ Level, Msg string }
	if err := json.Unmarshal(logged.Bytes(), &line); err != nil || line.Level != "WARN" || line.Msg != "s3: falling back to IMDSv1" {
		t.Fatalf("logged %q (%v); want one WARN line", logged.String(), err)
	}
	sdkLogger(nil).Logf(logging.Warn, "dropped") // must not panic
}

func TestConfigFromEnv(t *testing.T) {
	for _, v := range []string{"S3_ENDPOINT_URL", "S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION", "S3_PROJECTS_PREFIX", "S3_FORCE_PATH_STYLE", "S3_PART_SIZE"} {
		t.Setenv(v, "")
	}
	t.Setenv("S3_BUCKET_NAME", "")
	if _, ok, err := ConfigFromEnv(); ok || err != nil {
		t.Fatalf("without S3_BUCKET_NAME: ok=%v err=%v", ok, err)
	}
	t.Setenv("S3_BUCKET_NAME", "snaps")
	cfg, ok, err := ConfigFromEnv()
	if !ok || err != nil || cfg.Bucket != "snaps" || cfg.Region != DefaultRegion || cfg.PathStyle || cfg.Endpoint != "" {
		t.Fatalf("bucket only: %+v ok=%v err=%v", cfg, ok, err)
	}
	t.Setenv("S3_ENDPOINT_URL", "http://minio:9000")
	t.Setenv("S3_REGION", "eu-west-3")
	t.Setenv("S3_PROJECTS_PREFIX", "/projects/")
	cfg, _, err = ConfigFromEnv()
	if err != nil || cfg.Endpoint != "http://minio:9000" || cfg.Region != "eu-west-3" || cfg.Prefix != "projects" || !cfg.PathStyle {
		t.Fatalf("full: %+v err=%v", cfg, err)
	}
	t.Setenv("S3_FORCE_PATH_STYLE", "false")
	if cfg, _, err = ConfigFromEnv(); err != nil || cfg.PathStyle {
		t.Fatalf("S3_FORCE_PATH_STYLE=false: %+v err=%v", cfg, err)
	}
	t.Setenv("S3_FORCE_PATH_STYLE", "maybe")
	if _, ok, err = ConfigFromEnv(); !ok || err == nil {
		t.Fatalf("bad S3_FORCE_PATH_STYLE accepted")
	}
	t.Setenv("S3_FORCE_PATH_STYLE", "")
	t.Setenv("S3_ENDPOINT_URL", "minio:9000")
	if _, ok, err = ConfigFromEnv(); !ok || err == nil {
		t.Fatalf("endpoint without scheme accepted")
	}
	t.Setenv("S3_ENDPOINT_URL", "")
	t.Setenv("S3_PART_SIZE", "16MiB")
	if cfg, _, err = ConfigFromEnv(); err != nil || cfg.PartSize != 16<<20 {
		t.Fatalf("S3_PART_SIZE=16MiB: %+v err=%v", cfg, err)
	}
	for _, bad := range []string{"4MiB", "6GiB", "lots"} {
		t.Setenv("S3_PART_SIZE", bad)
		if _, ok, err = ConfigFromEnv(); !ok || err == nil || !strings.Contains(err.Error(), "S3_PART_SIZE") {
			t.Fatalf("S3_PART_SIZE=%s: %v; want an error naming the setting", bad, err)
		}
	}
}

// A prefix that a server mapping keys to files would read as a path out of the bucket (or that S3
// would store under a different name) is refused when the configuration is read, before
// anything is archived, rather than failing every hibernation later.
func TestConfigPrefix(t *testing.T) {
	t.Setenv("S3_BUCKET_NAME", "snaps")
	for _, v := range []string{"S3_ENDPOINT_URL", "S3_FORCE_PATH_STYLE", "S3_PART_SIZE"} {
		t.Setenv(v, "")
	}
	for prefix, want := range map[string]string{
		"":                "",
		"projects":        "projects",
		"/sail/projects/": "sail/projects",
		"../x":            "error",
		"a/../b":          "error",
		"./a":             "error",
		"a//b":            "error",
		"a\\b":            "error",
		"caf\xe9":         "error",
	} {
		t.Setenv("S3_PROJECTS_PREFIX", prefix)
		cfg, ok, err := ConfigFromEnv()
		switch {
		case !ok:
			t.Errorf("prefix %q: S3 not configured", prefix)
		case want == "error" && err == nil:
			t.Errorf("prefix %q accepted as %q", prefix, cfg.Prefix)
		case want == "error" && !strings.Contains(err.Error(), "S3_PROJECTS_PREFIX"):
			t.Errorf("prefix %q: error %q does not name the setting", prefix, err)
		case want != "error" && (err != nil || cfg.Prefix != want):
			t.Errorf("prefix %q: got %q, %v; want %q", prefix, cfg.Prefix, err, want)
		}
	}
}

func TestDescribeHidesSecrets(t *testing.T) {
	s := &Store{bucket: "b", prefix: "p", where: redactURL("https://user:secret@s3.example.com:9000/?X-Token=abc")}
	if got := s.Describe(); got != "s3://b/p (https://s3.example.com:9000/)" {
		t.Errorf("Describe() = %q", got)
	}
}

// newGen is a generated object of size bytes, always the same ones.
func newGen(size int64) *archivetest.Gen { return archivetest.NewGen([32]byte{7}, size) }

// heapSampler records the peak of HeapInuse plus the buffers kept outside the heap (the part
// buffers, see package offheap) while it runs.
type heapSampler struct {
	base uint64
	stop func() []uint64
}

func sampleHeap() *heapSampler {
	runtime.GC()
	var ms runtime.MemStats
	inUse := func() uint64 {
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse + uint64(offheap.InUse())
	}
	h := &heapSampler{base: inUse()}
	h.stop = archivetest.Peak(5*time.Millisecond, 1, func(v []uint64) { v[0] = inUse() })
	return h
}

// growth stops sampling and returns the peak growth over the baseline.
func (h *heapSampler) growth() int64 { return int64(h.stop()[0]) - int64(h.base) }

// TestLargePutBoundedMemory streams a 1 GiB generated object and checks that the memory in use
// (heap and part buffers) grows by less than 64 MiB meanwhile (the part buffers take 15 MiB),
// then reads it back.
func TestLargePutBoundedMemory(t *testing.T) {
	const size, limit = 1 << 30, 64 << 20
	srv := s3test.Start(t)
	s := open(t, srv, "")
	ctx := context.Background()
	gen := newGen(size)

	heap := sampleHeap()
	start := time.Now()
	info, err := s.Put(ctx, "big.bin", gen)
	d := time.Since(start)
	growth := heap.growth()
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	t.Logf("Put of %d MiB took %v (%.0f MiB/s), memory (heap and part buffers) grew by at most %.1f MiB (part buffers: %d × %d MiB)",
		size>>20, d.Round(time.Millisecond), float64(size)/(1<<20)/d.Seconds(), float64(growth)/(1<<20), DefaultConcurrency, DefaultPartSize>>20)
	if info.Size != size {
		t.Errorf("Put size = %d, want %d", info.Size, size)
	}
	if growth > limit {
		t.Errorf("memory (heap and part buffers) grew by %d MiB during a %d MiB Put (limit %d MiB)", growth>>20, size>>20, limit>>20)
	}
	objectstoretest.ReadBack(t, s, "big.bin", gen)
}

// getFirstMiB starts a Get of key and reads its first MiB into w: a stream under way, for the
// tests that break it (kill, restart, cancel). The stream is closed when t ends.
func getFirstMiB(t *testing.T, ctx context.Context, s *Store, key string, w io.Writer) io.ReadCloser {
	t.Helper()
	rc, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Close() })
	if _, err := io.CopyN(w, rc, 1<<20); err != nil {
		t.Fatal(err)
	}
	return rc
}

// leaveUpload starts a multipart upload of key and leaves it, as a process that crashed would.
func leaveUpload(t *testing.T, srv *s3test.Server, key string) {
	t.Helper()
	if _, err := srv.Client().CreateMultipartUpload(context.Background(),
		&s3.CreateMultipartUploadInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
}

// assertNoUploads checks that no multipart upload is left in the server's bucket.
func assertNoUploads(t *testing.T, srv *s3test.Server) {
	t.Helper()
	if ups := multipartUploads(t, srv); len(ups) != 0 {
		t.Errorf("multipart uploads left: %v", ups)
	}
}

func multipartUploads(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := srv.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	var ids []string
	for _, u := range out.Uploads {
		ids = append(ids, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
	}
	return ids
}

// TestServerKilledMidUpload kills the server while a multipart Put is streaming: the Put must
// fail within its retry budget, and once the server is back there is neither an object nor a
// multipart upload left.
func TestServerKilledMidUpload(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "")
	ctx := context.Background()
	gen := newGen(4 << 30)
	var once sync.Once
	gen.AfterRead = func(n int64) {
		if n >= 3*DefaultPartSize {
			once.Do(srv.Kill)
		}
	}
	start := time.Now()
	info, err := s.Put(ctx, "p/killed.tar.zst", gen)
	d := time.Since(start)
	if err == nil {
		t.Fatalf("Put succeeded on a killed server: %+v", info)
	}
	t.Logf("Put failed after %v: %v", d.Round(time.Millisecond), err)
	if d > 45*time.Second {
		t.Errorf("Put took %v to notice the server died", d)
	}
	if gen.N > 8*DefaultPartSize {
		t.Errorf("Put read %d MiB after the server died; it should stop reading", gen.N>>20)
	}

	srv.Restart()
	if _, err := s.Head(ctx, "p/killed.tar.zst"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Head after the failed Put: %v, want ErrNotFound", err)
	}
	if got := keysOf(t, s, ""); len(got) != 0 {
		t.Errorf("objects after the failed Put: %v", got)
	}
	// The abort could not reach the dead server; the store retries it in the background.
	deadline := time.Now().Add(30 * time.Second)
	for first := true; ; first = false {
		ups := multipartUploads(t, srv)
		if first {
			t.Logf("multipart uploads right after the restart: %v", ups)
		}
		if len(ups) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("multipart uploads left after the restart: %v", ups)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The store works again.
	if _, err := s.Put(ctx, "p/after.bin", strings.NewReader("ok")); err != nil {
		t.Fatalf("Put after the restart: %v", err)
	}
}

// TestCancelledMultipartPutAborts cancels a Put mid-way through its parts: no object, and the
// upload is aborted on the spot.
// An archive with more parts than S3 allows in one upload fails with an error that names the
// setting to raise, and leaves neither an object nor stored parts behind.
func TestTooManyParts(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "")
	s.maxParts = 2
	info, err := s.Put(context.Background(), "huge.bin", newGen(2*DefaultPartSize+1))
	if !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "S3_PART_SIZE") {
		t.Fatalf("Put of 3 parts with a limit of 2 = %+v, %v; want an error naming S3_PART_SIZE", info, err)
	}
	if _, err := s.Head(context.Background(), "huge.bin"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Head after the refused Put: %v", err)
	}
	assertNoUploads(t, srv)
	if info, err := s.Put(context.Background(), "fits.bin", newGen(2*DefaultPartSize)); err != nil || info.Size != 2*DefaultPartSize {
		t.Fatalf("Put of exactly 2 parts = %+v, %v", info, err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"5242880": 5 << 20, "5MiB": 5 << 20, "16M": 16 << 20, "16 MiB": 16 << 20, "16mb": 16 << 20,
		"1GiB": 1 << 30, "512KiB": 512 << 10, "2G": 2 << 30,
		"": -1, "MiB": -1, "16TiB": -1, "-5MiB": -1, "1.5GiB": -1, "16 potatoes": -1, "99999999999999GiB": -1,
	} {
		got, err := parseSize(in)
		if want < 0 {
			if err == nil {
				t.Errorf("parseSize(%q) = %d, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestCancelledMultipartPutAborts(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gen := newGen(1 << 30)
	gen.AfterRead = func(n int64) {
		if n >= 5*DefaultPartSize/2 {
			cancel()
		}
	}
	start := time.Now()
	if info, err := s.Put(ctx, "cancelled.bin", gen); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Put = %+v, %v; want context.Canceled", info, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancelled Put took %v", d)
	}
	if _, err := s.Head(context.Background(), "cancelled.bin"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Head after the cancelled Put: %v", err)
	}
	assertNoUploads(t, srv)
}

// TestGetKilledServer: a Get on a dead server fails (not hangs), and so does a read whose
// server dies mid-stream and stays dead.
func TestGetKilledServer(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "")
	ctx := context.Background()
	if _, err := s.Put(ctx, "obj", newGen(64<<20)); err != nil {
		t.Fatal(err)
	}
	rc := getFirstMiB(t, ctx, s, "obj", io.Discard)
	srv.Kill()
	start := time.Now()
	if n, err := io.Copy(io.Discard, rc); err == nil {
		t.Errorf("reading on after the server died gave %d bytes and no error", n)
	}
	if _, err := s.Get(ctx, "obj"); err == nil || errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Get on a dead server: %v; want a connection error", err)
	}
	if _, err := s.Head(ctx, "obj"); err == nil || errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Head on a dead server: %v; want a connection error", err)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("failing on a dead server took %v", d)
	}
}

// TestGetResumesAcrossRestart: a stream broken by a server restart resumes where it stopped
// and delivers exactly the object.
func TestGetResumesAcrossRestart(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "")
	ctx := context.Background()
	gen := newGen(64 << 20)
	if _, err := s.Put(ctx, "obj", gen); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	rc := getFirstMiB(t, ctx, s, "obj", h)
	srv.Restart()
	n, err := io.Copy(h, rc)
	if err != nil {
		t.Fatalf("read across a restart: %v", err)
	}
	if n+1<<20 != gen.Size || !bytes.Equal(h.Sum(nil), gen.Sum()) {
		t.Errorf("read %d bytes across a restart that differ from the object", n+1<<20)
	}
}

// TestGetCancelled: cancelling the context of a Get stops its reads.
func TestGetCancelled(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "")
	if _, err := s.Put(context.Background(), "obj", newGen(32<<20)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := getFirstMiB(t, ctx, s, "obj", io.Discard)
	cancel()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v; want context.Canceled", err)
	}
}

// TestAbortIncomplete removes the uploads a crashed process leaves, and only under the prefix.
func TestAbortIncomplete(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "mine")
	ctx := context.Background()
	for _, k := range []string{"mine/a", "mine/b/c", "theirs/a"} {
		leaveUpload(t, srv, k)
	}
	if n, err := s.AbortIncomplete(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("AbortIncomplete(1h) = %d, %v; want 0 (the uploads are new)", n, err)
	}
	if n, err := s.AbortIncomplete(ctx, 0); err != nil || n != 2 {
		t.Errorf("AbortIncomplete(0) = %d, %v; want 2", n, err)
	}
	ups := multipartUploads(t, srv)
	if len(ups) != 1 || !strings.HasPrefix(ups[0], "theirs/a ") {
		t.Errorf("uploads left: %v; want only theirs/a", ups)
	}
}

// TestRemoveLeftovers is what the purge sweep calls: uploads younger than LeftoverMinAge are
// kept whatever the cutoff (they may be live on another host), older ones before the cutoff go.
func TestRemoveLeftovers(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "mine")
	ctx := context.Background()
	leaveUpload(t, srv, "mine/p/s.tar.zst")
	if left, err := s.RemoveLeftovers(ctx, time.Now().Add(time.Minute)); err != nil || left.Count != 0 {
		t.Errorf("RemoveLeftovers of a new upload = %+v, %v; want it kept (younger than %s)", left, err, LeftoverMinAge)
	}
	s.leftoverMinAge = 0
	if left, err := s.RemoveLeftovers(ctx, time.Now().Add(-time.Hour)); err != nil || left.Count != 0 {
		t.Errorf("RemoveLeftovers with a cutoff before the upload = %+v, %v; want it kept", left, err)
	}
	if left, err := s.RemoveLeftovers(ctx, time.Now().Add(time.Minute)); err != nil || left.Count != 1 {
		t.Errorf("RemoveLeftovers = %+v, %v; want the upload aborted", left, err)
	}
	assertNoUploads(t, srv)
}

// TestConcurrentPuts runs large Puts at once: each gets its own part buffers, so they all
// proceed and each stays within its bound.
func TestConcurrentPuts(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv, "")
	ctx := context.Background()
	const puts, size = 4, 40 << 20
	heap := sampleHeap()
	var wg sync.WaitGroup
	gens := make([]*archivetest.Gen, puts)
	errs := make([]error, puts)
	for i := range puts {
		gens[i] = archivetest.NewGen([32]byte{byte(i)}, size)
		wg.Go(func() { _, errs[i] = s.Put(ctx, fmt.Sprintf("c/%d", i), gens[i]) })
	}
	wg.Wait()
	growth := heap.growth()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Put %d: %v", i, err)
		}
	}
	if bound := int64(puts * DefaultConcurrency * DefaultPartSize); growth > bound+32<<20 {
		t.Errorf("memory (heap and part buffers) grew by %d MiB with %d concurrent Puts (part buffers: %d MiB)", growth>>20, puts, bound>>20)
	}
	for i := range puts {
		rc, err := s.Get(ctx, fmt.Sprintf("c/%d", i))
		if err != nil {
			t.Fatal(err)
		}
		n, sum, err := archivetest.HashAll(rc)
		rc.Close()
		if err != nil || !gens[i].Matches(n, sum) {
			t.Errorf("object %d read back differs (%v)", i, err)
		}
	}
}

// TestPartBodyShut checks the guard around part buffers: once shut, a body never reads its
// buffer again (the buffer is reused, then unmapped), and it fails instead.
func TestPartBodyShut(t *testing.T) {
	data := []byte("part data")
	b := newPartBody(data)
	var out bytes.Buffer
	if n, err := b.WriteTo(&out); err != nil || n != int64(len(data)) || out.String() != string(data) {
		t.Fatalf("WriteTo = %d, %v (%q)", n, err, out.String())
	}
	if _, err := b.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "part" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	b.shut()
	if _, err := b.Read(buf); !errors.Is(err, errBodyShut) {
		t.Errorf("Read after shut: %v", err)
	}
	if _, err := b.Seek(0, io.SeekStart); !errors.Is(err, errBodyShut) {
		t.Errorf("Seek after shut: %v", err)
	}
	if _, err := b.WriteTo(&out); !errors.Is(err, errBodyShut) {
		t.Errorf("WriteTo after shut: %v", err)
	}
}
