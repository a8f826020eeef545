package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/sailtui/sailtui/backends/internal/sqlstore"
	"github.com/sailtui/sailtui/engine"
)

// ListContainers lists a project's containers by name.
func (s *Store) ListContainers(ctx context.Context, projectID string) ([]engine.Container, error) {
	cs, err := queryAll(ctx, s.db, scanContainer, `SELECT project_id, name, directory, port, command, env, git_url, git_branch, created_at, kind, spec
		FROM containers WHERE project_id = ? ORDER BY name`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list containers of %s: %w", projectID, err)
	}
	return cs, nil
}

func scanContainer(sc scanner) (engine.Container, error) {
	var c engine.Container
	var env, spec string
	var created int64
	if err := sc.Scan(&c.ProjectID, &c.Name, &c.Directory, &c.Port, &c.Command, &env, &c.GitURL, &c.GitBranch, &created, &c.Kind, &spec); err != nil {
		return engine.Container{}, err
	}
	if err := sqlstore.SetContainerSpec(&c, spec); err != nil {
		return engine.Container{}, err
	}
	if env != "" {
		if err := json.Unmarshal([]byte(env), &c.Env); err != nil {
			return engine.Container{}, fmt.Errorf("container %s: env: %w", c.Name, err)
		}
	}
	c.CreatedAt = fromMicros(created)
	return c, nil
}

// PutContainer inserts or replaces a container.
func (s *Store) PutContainer(ctx context.Context, c engine.Container) error {
	err := s.write(ctx, func(tx *sql.Tx) error { return putContainer(ctx, tx, c) })
	if err != nil {
		return fmt.Errorf("put container %s/%s: %w", c.ProjectID, c.Name, err)
	}
	return nil
}

// putContainer updates in place rather than INSERT OR REPLACE: a replace deletes the row first,
// and the foreign keys would cascade that delete to the container's connections.
func putContainer(ctx context.Context, tx *sql.Tx, c engine.Container) error {
	if c.Name == "" {
		return fmt.Errorf("%w: container name is required", engine.ErrBadInput)
	}
	var env string
	if len(c.Env) > 0 {
		b, err := json.Marshal(c.Env)
		if err != nil {
			return fmt.Errorf("env: %w", err)
		}
		env = string(b)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO containers
			(project_id, name, directory, port, command, env, git_url, git_branch, created_at, kind, spec)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (project_id, name) DO UPDATE SET
			directory = excluded.directory, port = excluded.port, command = excluded.command,
			env = excluded.env, git_url = excluded.git_url, git_branch = excluded.git_branch,
			created_at = excluded.created_at, kind = excluded.kind, spec = excluded.spec`,
		c.ProjectID, c.Name, c.Directory, c.Port, c.Command, env, c.GitURL, c.GitBranch, toMicros(c.CreatedAt),
		string(c.Kind), sqlstore.ContainerSpec(c))
	if isForeignKey(err) {
		return fmt.Errorf("project %s: %w", c.ProjectID, engine.ErrNotFound)
	}
	return err
}

// DeleteContainer removes a container and every connection naming it.
func (s *Store) DeleteContainer(ctx context.Context, projectID, name string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		// Explicit rather than left to ON DELETE CASCADE, so it holds even on a connection
		// opened without foreign keys.
		if _, err := tx.ExecContext(ctx, `DELETE FROM connections WHERE project_id = ? AND (from_name = ? OR to_name = ?)`,
			projectID, name, name); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM containers WHERE project_id = ? AND name = ?`, projectID, name)
		return mustAffect(res, err, engine.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("delete container %s/%s: %w", projectID, name, err)
	}
	return nil
}

// ListConnections lists a project's connections.
func (s *Store) ListConnections(ctx context.Context, projectID string) ([]engine.Connection, error) {
	cs, err := queryAll(ctx, s.db, scanConnection, `SELECT project_id, from_name, to_name FROM connections
		WHERE project_id = ? ORDER BY from_name, to_name`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list connections of %s: %w", projectID, err)
	}
	return cs, nil
}

func scanConnection(sc scanner) (engine.Connection, error) {
	var c engine.Connection
	err := sc.Scan(&c.ProjectID, &c.From, &c.To)
	return c, err
}

// PutConnection adds a connection; adding one that exists is not an error.
func (s *Store) PutConnection(ctx context.Context, c engine.Connection) error {
	err := s.write(ctx, func(tx *sql.Tx) error { return putConnection(ctx, tx, c) })
	if err != nil {
		return fmt.Errorf("put connection %s: %s -> %s: %w", c.ProjectID, c.From, c.To, err)
	}
	return nil
}

func putConnection(ctx context.Context, tx *sql.Tx, c engine.Connection) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO connections (project_id, from_name, to_name) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, c.ProjectID, c.From, c.To)
	if isForeignKey(err) {
		return fmt.Errorf("both containers must exist: %w", engine.ErrNotFound)
	}
	return err
}

// DeleteConnection removes a connection.
func (s *Store) DeleteConnection(ctx context.Context, c engine.Connection) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM connections WHERE project_id = ? AND from_name = ? AND to_name = ?`,
			c.ProjectID, c.From, c.To)
		return mustAffect(res, err, engine.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("delete connection %s: %s -> %s: %w", c.ProjectID, c.From, c.To, err)
	}
	return nil
}
