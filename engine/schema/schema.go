// Package schema reads a SQL store's migrations: numbered NNNN_name.sql files, applied in
// order. One loader for every store, so they agree on what "version N" means.
package schema

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema change. A released file is never edited: a change is a new file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the *.sql files of dir in fsys, in version order. A name that does not start with
// a positive number, a gap or a duplicate is an error: "version N applied" must mean one schema.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	ms, err := load(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return ms, nil
}

func load(fsys fs.FS, dir string) ([]Migration, error) {
	paths, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, p := range paths {
		base := strings.TrimSuffix(path.Base(p), ".sql")
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number", p)
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.Name, i+1)
		}
	}
	return ms, nil
}

// VersionQuery reads a database's schema version from the schema_migrations table every
// store keeps: 0 when no migration is applied yet.
const VersionQuery = `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`

// CheckVersion refuses a database whose schema version cur is newer than latest, the newest
// this binary knows: its tables may mean things this binary does not know, and writing them
// could corrupt its data.
func CheckVersion(cur, latest int) error {
	if cur > latest {
		return fmt.Errorf("database schema version %d is newer than this sailtui supports (%d): "+
			"it was written by a newer sailtui; upgrade sailtui or use another database", cur, latest)
	}
	return nil
}
