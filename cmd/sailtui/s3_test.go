package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sailtui/sailtui/backends/s3/s3test"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// s3Env points the process at a real S3 server (versitygw on loopback): with S3_BUCKET_NAME set,
// every archive snapshot goes to the bucket.
func s3Env(t *testing.T, srv *s3test.Server) []string {
	env := []string{
		"S3_BUCKET_NAME=" + srv.Bucket, "S3_ENDPOINT_URL=" + srv.Endpoint, "S3_REGION=" + srv.Region,
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey,
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return env
}

func bucketKeys(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	out, err := srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatalf("list bucket: %v", err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// writeBigTree adds what the issue names to a project tree: many small files, a large file,
// empty dirs, symlinks, executable bits and non-UTF-8 names.
func writeBigTree(t *testing.T, root string, small int, large int64) {
	t.Helper()
	for i := range small {
		dir := filepath.Join(root, "many", fmt.Sprintf("d%03d", i/500))
		if i%500 == 0 {
			must(t, os.MkdirAll(dir, 0o755))
		}
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.txt", i)), fmt.Appendf(nil, "file %d\n", i), 0o644))
	}
	f, err := os.Create(filepath.Join(root, "large.bin"))
	must(t, err)
	_, err = io.CopyN(f, rand.Reader, large)
	must(t, err)
	must(t, f.Close())
	must(t, os.MkdirAll(filepath.Join(root, "empty", "deeper"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\necho run\n"), 0o755))
	must(t, os.Symlink("many/d000/f00000.txt", filepath.Join(root, "first")))
	must(t, os.WriteFile(filepath.Join(root, "caf\xe9-latin1.txt"), []byte("latin-1 name\n"), 0o600))
}

// Hibernate and wake through S3: the tree is byte-identical afterwards. The full size (50k
// files, a 1 GiB file) runs by default; SAILTUI_S3_SMALL=1 shrinks it for quick loops.
func TestS3HibernateWakeRoundTrip(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	state := t.TempDir()
	pt := openTest(t, state, "test-s3")
	ctx := context.Background()
	p := newProject(t, pt.eng, "bigtree")
	small, large := 50_000, int64(1<<30)
	if os.Getenv("SAILTUI_S3_SMALL") != "" {
		small, large = 2_000, 16<<20
	}
	dir := filepath.Join(state, "projects", p.Slug)
	writeBigTree(t, dir, small, large)
	before := treeDigest(t, dir)
	if _, err := pt.eng.Hibernate(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("project directory survived hibernation: %v", err)
	}
	if keys := bucketKeys(t, srv); len(keys) != 1 || !strings.HasPrefix(keys[0], "projects/local/"+p.ID+"/hibernation-") {
		t.Fatalf("bucket holds %v, want one hibernation archive under projects/<owner>/<project>/", keys)
	}
	if _, err := pt.eng.Wake(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	if d := diffDigests(before, treeDigest(t, dir)); d != "" {
		t.Fatalf("tree differs after the S3 round trip:\n%s", d)
	}
}

// killAfter kills the S3 server once a journaled step is reached, after a delay that puts the
// kill in the middle of the transfer that follows the step.
func killAfter(srv *s3test.Server, kind engine.OpKind, step string, delay time.Duration) (func(engine.OpKind, string), <-chan struct{}) {
	var once sync.Once
	killed := make(chan struct{})
	return func(k engine.OpKind, s string) {
		if k == kind && s == step {
			once.Do(func() {
				go func() {
					time.Sleep(delay)
					srv.Kill()
					close(killed)
				}()
			})
		}
	}, killed
}

// S3 killed mid-upload: the hibernation aborts, the project stays active and intact, and the
// partial upload is never taken for a ready snapshot. A retry after the server is back works.
func TestS3KilledMidUpload(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	state := t.TempDir()
	hook, killed := killAfter(srv, engine.OpHibernate, "snapshot-pending", 300*time.Millisecond)
	pt := openTest(t, state, "test-s3", func(c *engine.Config) { c.StepHook = hook })
	ctx := context.Background()
	p := newProject(t, pt.eng, "upload")
	dir := filepath.Join(state, "projects", p.Slug)
	writeBigTree(t, dir, 100, 512<<20)
	before := treeDigest(t, dir)
	_, err := pt.eng.Hibernate(ctx, p.Slug)
	<-killed
	if err == nil {
		t.Fatal("hibernation succeeded although the S3 server died during the upload")
	}
	got, _ := pt.eng.Project(ctx, p.Slug)
	if got.Status != engine.StatusActive || got.OpID != "" {
		t.Fatalf("after the failed upload: %+v", got)
	}
	if d := diffDigests(before, treeDigest(t, dir)); d != "" {
		t.Fatalf("tree changed:\n%s", d)
	}
	snaps, _ := pt.eng.Snapshots(ctx, p.Slug, true)
	for _, s := range snaps {
		if s.Status == engine.SnapshotReady {
			t.Fatalf("a partial upload became ready snapshot %s", s.ID)
		}
	}
	srv.Restart()
	if _, err := pt.eng.Hibernate(ctx, p.Slug); err != nil {
		t.Fatalf("retry after the server came back: %v", err)
	}
	if _, err := pt.eng.Wake(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	if d := diffDigests(before, treeDigest(t, dir)); d != "" {
		t.Fatalf("tree differs after the retried round trip:\n%s", d)
	}
}

// S3 killed mid-download on wake: the project stays hibernated, and a retry succeeds.
func TestS3KilledMidDownload(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	state := t.TempDir()
	hook, killed := killAfter(srv, engine.OpWake, "restoring", 200*time.Millisecond)
	pt := openTest(t, state, "test-s3", func(c *engine.Config) { c.StepHook = hook })
	ctx := context.Background()
	p := newProject(t, pt.eng, "download")
	dir := filepath.Join(state, "projects", p.Slug)
	writeBigTree(t, dir, 100, 512<<20)
	before := treeDigest(t, dir)
	if _, err := pt.eng.Hibernate(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	_, err := pt.eng.Wake(ctx, p.Slug)
	<-killed
	if err == nil {
		t.Fatal("wake succeeded although the S3 server died during the download")
	}
	got, _ := pt.eng.Project(ctx, p.Slug)
	if got.Status != engine.StatusHibernated || got.OpID != "" {
		t.Fatalf("after the failed download: %+v", got)
	}
	srv.Restart()
	if _, err := pt.eng.Wake(ctx, p.Slug); err != nil {
		t.Fatalf("retry after the server came back: %v", err)
	}
	if d := diffDigests(before, treeDigest(t, dir)); d != "" {
		t.Fatalf("tree differs after the retried wake:\n%s", d)
	}
}

// A corrupted object: a clear error naming the snapshot, nothing extracted over the project.
func TestS3CorruptedObject(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	state := t.TempDir()
	pt := openTest(t, state, "test-s3")
	ctx := context.Background()
	p := newProject(t, pt.eng, "rotten")
	live, err := pt.eng.CreateSnapshot(ctx, p.Slug, "good")
	if err != nil {
		t.Fatal(err)
	}
	// Corrupt the manual snapshot's object in the bucket.
	obj, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(live.Location)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	b[len(b)/2] ^= 0x55
	if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(live.Location), Body: bytes.NewReader(b)}); err != nil {
		t.Fatal(err)
	}
	must(t, pt.eng.WriteFile(ctx, p.Slug, "after.txt", strings.NewReader("written after the snapshot")))
	dir := filepath.Join(state, "projects", p.Slug)
	before := treeDigest(t, dir)
	_, err = pt.eng.RestoreSnapshot(ctx, p.Slug, live.ID)
	if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), live.ID) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("restore of a corrupted object: %v (want a checksum error naming %s, saying nothing was changed)", err, live.ID)
	}
	if d := diffDigests(before, treeDigest(t, dir)); d != "" {
		t.Fatalf("a corrupted archive was extracted over the project:\n%s", d)
	}
	if got, _ := pt.eng.Project(ctx, p.Slug); got.Status != engine.StatusActive {
		t.Fatalf("project is %s after the refused restore", got.Status)
	}
}

// An archive gone from the bucket (a lifecycle rule, a hand-made cleanup): the wake fails with
// an error that names the snapshot and says what to do, and the project stays hibernated.
func TestS3WakeMissingArchive(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	state := t.TempDir()
	pt := openTest(t, state, "test-s3")
	ctx := context.Background()
	p := newProject(t, pt.eng, "vanished")
	hib, err := pt.eng.Hibernate(ctx, p.Slug)
	if err != nil {
		t.Fatal(err)
	}
	keys := bucketKeys(t, srv)
	if len(keys) != 1 {
		t.Fatalf("bucket holds %v, want the hibernation archive", keys)
	}
	if _, err := srv.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(keys[0])}); err != nil {
		t.Fatal(err)
	}
	_, err = pt.eng.Wake(ctx, p.Slug)
	if !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), hib.HibernationSnapshot) || !strings.Contains(err.Error(), "restore another of the project's snapshots") {
		t.Fatalf("wake without its archive: %v (want not found, naming %s and the way out)", err, hib.HibernationSnapshot)
	}
	if got, _ := pt.eng.Project(ctx, p.Slug); got.Status != engine.StatusHibernated || got.OpID != "" {
		t.Fatalf("after the failed wake: %+v", got)
	}
}

// Invariant 7 (enginetest.PurgeFreesStorage) over S3: the purge removes the object behind
// every expired snapshot, checked by listing the bucket.
func TestS3PurgeFreesBucket(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	pt := openTest(t, t.TempDir(), "test-s3")
	enginetest.PurgeFreesStorage(t, pt.eng, pt.store, func() []string { return bucketKeys(t, srv) })
}

// S3 credentials stay in the process that runs the engine: a container never sees them.
func TestS3CredentialsStayOut(t *testing.T) {
	srv := s3test.Start(t)
	c := newCLI(t)
	c.env = append(s3Env(t, srv), "SAILTUI_DEFAULT_COMMAND="+selfCommand())
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "TESSLATE.md"), []byte("# x\n"), 0o644))
	c.ok("project", "create", "sealed", "--from", src)
	c.ok("project", "start", "sealed")
	env := c.ok("exec", "sealed", "app", "--", "env")
	for _, secret := range []string{srv.SecretKey, srv.AccessKey, "AWS_", "S3_BUCKET_NAME"} {
		if strings.Contains(env, secret) {
			t.Fatalf("container environment carries %q:\n%s", secret, env)
		}
	}
	// Nor does the environment of the container's running process.
	var cs []struct {
		Name string
		PID  int
	}
	c.json(&cs, "containers", "ls", "sealed")
	if len(cs) != 1 || cs[0].PID == 0 {
		t.Fatalf("containers: %+v", cs)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cs[0].PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{srv.SecretKey, "AWS_", "S3_BUCKET_NAME"} {
		if bytes.Contains(environ, []byte(secret)) {
			t.Fatalf("the container's process environment carries %q", secret)
		}
	}
}
