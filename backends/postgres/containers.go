package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sailtui/sailtui/backends/internal/sqlstore"
	"github.com/sailtui/sailtui/engine"
)

// ListContainers lists a project's containers by name.
func (s *Store) ListContainers(ctx context.Context, projectID string) ([]engine.Container, error) {
	rows, err := s.pool.Query(ctx, `SELECT project_id, name, directory, port, command, env, git_url, git_branch, created_at, kind, spec
		FROM containers WHERE project_id = $1 ORDER BY name`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list containers of %s: %w", projectID, badInput(err))
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Container, error) {
		var c engine.Container
		var env, spec string
		if err := r.Scan(&c.ProjectID, &c.Name, &c.Directory, &c.Port, &c.Command, &env, &c.GitURL, &c.GitBranch, &c.CreatedAt, &c.Kind, &spec); err != nil {
			return c, err
		}
		if err := sqlstore.SetContainerSpec(&c, spec); err != nil {
			return c, err
		}
		if env != "" {
			if err := json.Unmarshal([]byte(env), &c.Env); err != nil {
				return c, fmt.Errorf("container %s: env: %w", c.Name, err)
			}
		}
		c.CreatedAt = fromDB(c.CreatedAt)
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list containers of %s: %w", projectID, err)
	}
	return cs, nil
}

// PutContainer inserts or replaces a container.
func (s *Store) PutContainer(ctx context.Context, c engine.Container) error {
	if err := putContainer(ctx, s.pool, c); err != nil {
		return fmt.Errorf("put container %s/%s: %w", c.ProjectID, c.Name, err)
	}
	return nil
}

// putContainerQuery updates in place: deleting and re-inserting the row would cascade to the
// container's connections.
const putContainerQuery = `INSERT INTO containers
		(project_id, name, directory, port, command, env, git_url, git_branch, created_at, kind, spec)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
	ON CONFLICT (project_id, name) DO UPDATE SET
		directory = excluded.directory, port = excluded.port, command = excluded.command,
		env = excluded.env, git_url = excluded.git_url, git_branch = excluded.git_branch,
		created_at = excluded.created_at, kind = excluded.kind, spec = excluded.spec`

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func putContainer(ctx context.Context, db execer, c engine.Container) error {
	if c.Name == "" {
		return fmt.Errorf("%w: container name is required", engine.ErrBadInput)
	}
	// Marshalling a map[string]string cannot fail.
	env := ""
	if len(c.Env) > 0 {
		b, _ := json.Marshal(c.Env)
		env = string(b)
	}
	_, err := db.Exec(ctx, putContainerQuery,
		c.ProjectID, c.Name, c.Directory, c.Port, c.Command, env, c.GitURL, c.GitBranch, c.CreatedAt,
		string(c.Kind), sqlstore.ContainerSpec(c))
	if isForeignKey(err) {
		return fmt.Errorf("project %s: %w", c.ProjectID, engine.ErrNotFound)
	}
	return badInput(err)
}

// DeleteContainer removes a container and every connection naming it.
func (s *Store) DeleteContainer(ctx context.Context, projectID, name string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// Explicit rather than left to ON DELETE CASCADE, as in the SQLite store.
		if _, err := tx.Exec(ctx, `DELETE FROM connections WHERE project_id = $1 AND (from_name = $2 OR to_name = $2)`,
			projectID, name); err != nil {
			return badInput(err)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM containers WHERE project_id = $1 AND name = $2`, projectID, name)
		if err != nil {
			return badInput(err)
		}
		if tag.RowsAffected() == 0 {
			return engine.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete container %s/%s: %w", projectID, name, err)
	}
	return nil
}

// ListConnections lists a project's connections.
func (s *Store) ListConnections(ctx context.Context, projectID string) ([]engine.Connection, error) {
	rows, err := s.pool.Query(ctx, `SELECT project_id, from_name, to_name FROM connections
		WHERE project_id = $1 ORDER BY from_name, to_name`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list connections of %s: %w", projectID, badInput(err))
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Connection, error) {
		var c engine.Connection
		err := r.Scan(&c.ProjectID, &c.From, &c.To)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list connections of %s: %w", projectID, err)
	}
	return cs, nil
}

// PutConnection adds a connection; adding one that exists is not an error.
func (s *Store) PutConnection(ctx context.Context, c engine.Connection) error {
	if err := putConnection(ctx, s.pool, c); err != nil {
		return fmt.Errorf("put connection %s: %s -> %s: %w", c.ProjectID, c.From, c.To, err)
	}
	return nil
}

func putConnection(ctx context.Context, db execer, c engine.Connection) error {
	_, err := db.Exec(ctx, `INSERT INTO connections (project_id, from_name, to_name) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, c.ProjectID, c.From, c.To)
	if isForeignKey(err) {
		return fmt.Errorf("both containers must exist: %w", engine.ErrNotFound)
	}
	return badInput(err)
}

// DeleteConnection removes a connection.
func (s *Store) DeleteConnection(ctx context.Context, c engine.Connection) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM connections WHERE project_id = $1 AND from_name = $2 AND to_name = $3`,
		c.ProjectID, c.From, c.To)
	if err == nil && tag.RowsAffected() == 0 {
		err = engine.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete connection %s: %s -> %s: %w", c.ProjectID, c.From, c.To, badInput(err))
	}
	return nil
}
