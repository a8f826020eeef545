// Package pgtest gives tests a real, throwaway PostgreSQL: a cluster initdb'd in a temporary
// directory from the server binaries in /usr/lib/postgresql/*/bin (Debian package
// postgresql-NN), listening on a free port on 127.0.0.1 and run as an unprivileged user when
// the tests run as root (PostgreSQL refuses to run as root). Without the binaries it fails the
// test with a message saying what to install; it never skips.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sailtui/sailtui/backends/internal/testproc"
)

// BinEnv, when set, is the directory holding initdb and postgres (instead of the newest
// /usr/lib/postgresql/*/bin).
const BinEnv = "SAILTUI_PG_BIN"

// nobody runs the server when the tests run as root.
const nobody = 65534

const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second
)

// Server is one throwaway PostgreSQL cluster owned by this process.
type Server struct {
	// Port is the TCP port on 127.0.0.1; it stays the same across Stop and Start.
	Port int

	root string // temporary directory: data/, sock/, server.log
	bin  string
	cred *syscall.Credential

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	dbs    int
}

// NewServer creates a cluster and starts it. Call Remove when done.
func NewServer(ctx context.Context) (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "sailtui-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{root: root, bin: bin}
	if err := s.create(ctx); err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	// A port found free can be taken before the server binds it: try a few.
	for attempt := 0; ; attempt++ {
		if s.Port, err = testproc.FreePort(); err == nil {
			err = s.Start(ctx)
		}
		if err == nil || attempt == 2 || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	return s, nil
}

func findBin() (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err != nil {
			return "", fmt.Errorf("pgtest: %s=%s: %w", BinEnv, dir, err)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var found []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return "", errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin: " +
			"install the Debian package postgresql-15 (or the postgresql metapackage), or set " + BinEnv)
	}
	version := func(d string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return found[0], nil
}

// create runs initdb, as the unprivileged user when we are root.
func (s *Server) create(ctx context.Context) error {
	if os.Geteuid() == 0 {
		s.cred = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
		if err := os.Chown(s.root, nobody, nobody); err != nil {
			return fmt.Errorf("pgtest: hand %s to uid %d: %w", s.root, nobody, err)
		}
	}
	if err := os.Mkdir(s.sockDir(), 0o700); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(s.sockDir(), nobody, nobody); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	cmd := s.command(ctx, "initdb", "-D", s.dataDir(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgtest: initdb in %s: %w\n%s", s.dataDir(), err, out.String())
	}
	return nil
}

func (s *Server) dataDir() string { return filepath.Join(s.root, "data") }
func (s *Server) sockDir() string { return filepath.Join(s.root, "sock") }
func (s *Server) logPath() string { return filepath.Join(s.root, "server.log") }

// command runs a server binary with a clean environment: PG* variables of the test run must not
// steer initdb or the server.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.root
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "LANG=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// DSN is the URL of database db as the superuser "postgres".
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// Start starts the (stopped) server on its port and data directory and waits until it accepts
// connections.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	// Durability is worthless for a throwaway cluster; speed is not.
	cmd := s.command(context.WithoutCancel(ctx), "postgres", "-D", s.dataDir(), "-k", s.sockDir(),
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=64MB", "-c", "log_min_messages=warning",
		"-c", "timezone=UTC")
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test binary killed outright (timeout, ^C) must not leave a server behind: fast shutdown.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := s.waitReady(ctx, exited); err != nil {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
		return fmt.Errorf("pgtest: postgres on port %d: %w\n%s", s.Port, err, s.logTail())
	}
	s.cmd, s.exited = cmd, exited
	return nil
}

func (s *Server) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	// Through the unix socket in our own directory: whatever answers on the TCP port might be
	// another server that took the port first.
	sock := fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", s.sockDir(), s.Port)
	for {
		conn, err := pgx.Connect(ctx, sock)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-exited:
			return errors.New("server exited during startup")
		case <-ctx.Done():
			return fmt.Errorf("not accepting connections after %v: %w", readyTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return "server log (" + s.logPath() + "):\n" + string(b)
}

// Stop shuts the server down (fast shutdown: clients are disconnected) and keeps its data.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
		return nil
	case <-time.After(stopTimeout):
	}
	// Immediate shutdown, then the hard way.
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return fmt.Errorf("pgtest: postgres did not stop within %v\n%s", stopTimeout, s.logTail())
}

// Remove stops the server and deletes its files.
func (s *Server) Remove() error {
	err := s.Stop()
	return errors.Join(err, os.RemoveAll(s.root))
}

// CreateDatabase creates an empty database and returns its DSN.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.dbs++
	name := fmt.Sprintf("t%04d", s.dbs)
	s.mu.Unlock()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return s.DSN(name), nil
}

// DropDatabase drops the database of dsn, disconnecting its clients.
func (s *Server) DropDatabase(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("pgtest: drop database %s: %w", cfg.Database, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{cfg.Database}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: drop database %s: %w", cfg.Database, err)
	}
	return nil
}

// String describes the server for failure messages.
func (s *Server) String() string {
	return fmt.Sprintf("postgres (%s) on 127.0.0.1:%d, data in %s", strings.TrimSuffix(s.bin, "/bin"), s.Port, s.dataDir())
}
