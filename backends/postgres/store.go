// Package postgres is the server engine.Store on PostgreSQL (pgx/v5, pgxpool) and the
// LISTEN/NOTIFY engine.Notifier, for several sailtui processes (console, CronJob sweeps) sharing
// one database.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sailtui/sailtui/engine"
)

// DefaultStatementTimeout bounds every statement when Options.StatementTimeout is zero: a sweep
// stuck behind a lock must fail inside its CronJob window rather than hang.
const DefaultStatementTimeout = 30 * time.Second

// defaultConnectTimeout applies when the DSN sets no connect_timeout (pgx waits forever then).
const defaultConnectTimeout = 10 * time.Second

// Options tunes the connection pool.
type Options struct {
	// MaxConns caps the pool. 0 keeps pool_max_conns from the DSN, else pgxpool's default (the
	// larger of 4 and the number of CPUs).
	MaxConns int32
	// StatementTimeout is set as statement_timeout on every connection. 0 means
	// DefaultStatementTimeout; negative leaves the server's (or the DSN's) setting alone.
	StatementTimeout time.Duration
	// ApplicationName shows in pg_stat_activity; empty means "sailtui". An application_name in
	// the DSN or PGAPPNAME wins, so operators can tell the console from the CronJob.
	ApplicationName string
}

// Store implements engine.Store on a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
	desc string
}

var _ engine.Store = (*Store)(nil)

// Open connects to the database named by dsn (a URL or keyword/value string; empty means the
// libpq PG* environment variables) and brings its schema up to date. It refuses a database
// whose schema is newer than this binary knows. The tables go into the first schema of the
// search_path (search_path=... in the DSN picks another); the user needs CREATE on it.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("open postgres store: %w: %w", engine.ErrBadInput, err)
	}
	configure(cfg, opts)
	desc := describe(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", desc, err)
	}
	s := &Store{pool: pool, desc: desc}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open %s: %w", desc, err)
	}
	return s, nil
}

func configure(cfg *pgxpool.Config, opts Options) {
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	// Runtime params travel in the startup message: no extra round trip per connection, and the
	// notifier's dedicated connection (made from the same ConnConfig) gets them too.
	params := cfg.ConnConfig.RuntimeParams
	if params["application_name"] == "" {
		name := opts.ApplicationName
		if name == "" {
			name = "sailtui"
		}
		params["application_name"] = name
	}
	timeout := opts.StatementTimeout
	if timeout == 0 {
		timeout = DefaultStatementTimeout
	}
	if timeout > 0 {
		params["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	// Without it a ping of a connection to a server that stopped answering waits forever.
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = 5 * time.Second
	}
}

// describe names the database without credentials.
func describe(cc *pgx.ConnConfig) string {
	return "postgres " + net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))) + "/" + cc.Database
}

// Describe names the store for humans: "postgres host:port/db".
func (s *Store) Describe() string { return s.desc }

// Pool is the store's connection pool, for a Notifier on the same database.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes every connection of the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// tx runs fn in one transaction, committing when fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// SQLSTATEs the store maps onto engine errors.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
	codeBadEncoding         = "22021" // invalid byte sequence (e.g. a string that is not UTF-8)
	codeUntranslatable      = "22P05"
)

func pgCode(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

func isUnique(err error) bool {
	c, _ := pgCode(err)
	return c == codeUniqueViolation
}

func isForeignKey(err error) bool {
	c, _ := pgCode(err)
	return c == codeForeignKeyViolation
}

// badInput marks text PostgreSQL cannot store (NUL bytes, invalid UTF-8) as the caller's error,
// not the database's.
func badInput(err error) error {
	if c, _ := pgCode(err); c == codeBadEncoding || c == codeUntranslatable {
		return fmt.Errorf("%w: %w", engine.ErrBadInput, err)
	}
	return err
}

// fromDB returns a stored time in UTC; the stored zero time (0001-01-01 UTC) is time.Time{}.
func fromDB(t time.Time) time.Time {
	t = t.UTC()
	if t.IsZero() {
		return time.Time{}
	}
	return t
}

// params numbers query arguments as they are added, for queries built from optional filters.
type params []any

func (p *params) add(v any) string {
	*p = append(*p, v)
	return "$" + strconv.Itoa(len(*p))
}

// strs converts typed strings for a text[] parameter.
func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// limitClause is " LIMIT n" for a positive limit; 0 means no limit.
func limitClause(limit int) string {
	if limit <= 0 {
		return ""
	}
	return " LIMIT " + strconv.Itoa(limit)
}
