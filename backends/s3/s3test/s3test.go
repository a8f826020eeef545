// Package s3test runs a real S3 server for tests: versitygw with its posix backend, on a
// loopback port, with its data in a temporary directory. A test that cannot get one fails
// with the command that installs it; it never skips (DESIGN.md, test tiers).
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/sailtui/sailtui/backends/internal/testproc"
)

// Version is the versitygw release the tests are written against.
const Version = "v1.8.0"

// EnvBinary names the environment variable that may point at the versitygw binary.
const EnvBinary = "SAILTUI_VERSITYGW"

// Region is the region the server is started with.
const Region = "us-east-1"

// startTimeout bounds how long a starting server may take to answer; it normally takes well
// under a second.
const startTimeout = 20 * time.Second

// Server is a running versitygw. Its fields stay valid across Kill and Restart: a restarted
// server listens on the same endpoint and serves the same data.
type Server struct {
	Endpoint  string // http://127.0.0.1:port
	AccessKey string
	SecretKey string
	Region    string
	// Bucket is a fresh, empty bucket made for the test.
	Bucket string

	tb      testing.TB
	bin     string
	addr    string
	dataDir string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs a versitygw for tb and makes it a bucket; the server is stopped and its files
// removed when tb ends. The binary is $SAILTUI_VERSITYGW, else .tools/bin/versitygw in the
// repository (found by walking up to go.mod), else versitygw on PATH.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := findBinary(tb)
	dir := tb.TempDir()
	s := &Server{
		AccessKey: "sailtui-test-" + randomHex(tb, 4),
		SecretKey: randomHex(tb, 20),
		Region:    Region,
		tb:        tb,
		bin:       bin,
		dataDir:   filepath.Join(dir, "data"),
		logPath:   filepath.Join(dir, "versitygw.log"),
	}
	if err := os.Mkdir(s.dataDir, 0o755); err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	port, err := testproc.FreePort()
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	s.addr = "127.0.0.1:" + strconv.Itoa(port)
	s.Endpoint = "http://" + s.addr
	tb.Cleanup(s.Kill)
	s.start()
	s.Bucket = s.NewBucket(tb)
	return s
}

// Client returns an SDK client for the server, for what the code under test does not do
// itself (listing multipart uploads, making buckets).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  s.Credentials(),
	})
}

// Credentials returns the server's root credentials as an SDK provider.
func (s *Server) Credentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")
}

// NewBucket makes another empty bucket on the server.
func (s *Server) NewBucket(tb testing.TB) string {
	tb.Helper()
	name := "sailtui-" + randomHex(tb, 6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("s3test: create bucket %s on versitygw at %s: %v\n%s", name, s.Endpoint, err, s.logTail())
	}
	return name
}

// PID is the server process's id (0 when it is not running), for reading its memory use.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Kill stops the server abruptly (SIGKILL), as a crash would; its data stays for Restart.
// Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts a killed server again on the same address with the same data (killing it
// first if it is running).
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	s.start()
}

func (s *Server) start() {
	s.tb.Helper()
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.tb.Fatalf("s3test: %v", err)
	}
	defer log.Close()
	cmd := exec.Command(s.bin, "--port", s.addr, "--region", s.Region, "--keep-alive", "--quiet", "posix", s.dataDir)
	// Credentials through the environment, so they do not show in the process list.
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	cmd.Stdout, cmd.Stderr = log, log
	testproc.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("s3test: start %s: %v\n%s", s.bin, err, installHint())
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	// Any HTTP answer (an anonymous request gets 403) means the server is serving.
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			s.tb.Fatalf("s3test: versitygw (%s) exited while starting on %s:\n%s\n%s", s.bin, s.addr, s.logTail(), installHint())
		default:
		}
		resp, err := hc.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			s.Kill()
			s.tb.Fatalf("s3test: versitygw did not answer on %s within %v: %v\n%s", s.addr, startTimeout, err, s.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return "versitygw log:\n" + string(bytes.TrimSpace(b))
}

// findBinary locates versitygw or fails the test saying how to install it.
func findBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(EnvBinary); p != "" {
		if !isExecutable(p) {
			tb.Fatalf("s3test: $%s=%s is not an executable file\n%s", EnvBinary, p, installHint())
		}
		return p
	}
	if root, err := testproc.RepoRoot(); err == nil {
		if p := filepath.Join(root, ".tools", "bin", "versitygw"); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	tb.Fatalf("s3test: versitygw not found ($%s, .tools/bin/versitygw, PATH); the S3 tests need a real S3 server.\n%s", EnvBinary, installHint())
	return ""
}

// InstallCommand is the command that puts versitygw where Start looks for it.
func InstallCommand() string {
	gobin := "<repo>/.tools/bin"
	if root, err := testproc.RepoRoot(); err == nil {
		gobin = filepath.Join(root, ".tools", "bin")
	}
	return fmt.Sprintf("GOBIN=%s go install github.com/versity/versitygw/cmd/versitygw@%s", gobin, Version)
}

func installHint() string {
	return "install it with (about 70 s):\n  " + InstallCommand()
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func randomHex(tb testing.TB, n int) string {
	h, err := testproc.RandomHex(n)
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	return h
}
