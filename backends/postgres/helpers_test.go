package postgres

import (
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sailtui/sailtui/engine"
)

func parse(t testing.TB, dsn string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func itoa(i int) string { return strconv.Itoa(i) }

// recv waits up to d for the next event on ch that satisfies keep.
func recv(t testing.TB, ch <-chan engine.Event, d time.Duration, keep func(engine.Event) bool) (engine.Event, bool) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatal("event channel closed")
			}
			if keep(e) {
				return e, true
			}
		case <-timeout:
			return engine.Event{}, false
		}
	}
}
