package dockertest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// query is a python program of the app image that connects to the DSN of argv[1] (retrying
// while the server starts, 60 s) and prints the first row of the query of argv[2].
const query = `import sys, time, psycopg2
deadline = time.time() + 60
while True:
    try:
        conn = psycopg2.connect(sys.argv[1], connect_timeout=3)
        break
    except psycopg2.OperationalError as e:
        if "password authentication failed" in str(e) or time.time() > deadline:
            print("connect:", str(e).strip())
            sys.exit(3)
        time.sleep(0.5)
conn.autocommit = True
cur = conn.cursor()
cur.execute(sys.argv[2])
print(cur.fetchone() if cur.description else "done")
`

// TestDebianPostgres: the PostgreSQL images behave as the official image does for a user, in
// both variants: an empty data volume is initialised from POSTGRES_USER, POSTGRES_PASSWORD and
// POSTGRES_DB, the server runs as postgres and takes the password over the network (not another),
// and a second container on the same volume just starts (a changed POSTGRES_PASSWORD does not
// re-initialise it), with the data the first wrote; without POSTGRES_PASSWORD the first start
// is refused, naming it. The app image's psycopg2 is the client.
func TestDebianPostgres(t *testing.T) {
	cli := Client(t)
	app := DebianImageT(t, cli, AppImage)
	for _, img := range []DebianImage{PostgresImage, PostgresNonRootImage} {
		t.Run(img.Repo, func(t *testing.T) {
			ref := DebianImageT(t, cli, img)
			tok := Token(t, cli)
			ctx := t.Context()
			labels := map[string]string{Label: tok}
			nw, err := cli.NetworkCreate(ctx, "pgtest-"+tok, client.NetworkCreateOptions{Labels: labels})
			if err != nil {
				t.Fatalf("network: %v", err)
			}
			vol := "pgtest-" + tok
			if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: vol, Labels: labels}); err != nil {
				t.Fatalf("volume: %v", err)
			}
			ins, err := cli.ImageInspect(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			nonRoot := img.Repo == PostgresNonRootImage.Repo
			if u := ins.Config.User; nonRoot != (u != "" && u != "root" && u != "0") || nonRoot && strings.Trim(u, "0123456789:") != "" {
				t.Fatalf("%s runs as %q: the non-root variant needs a numeric user, the other root", ref, u)
			}
			server := func(name, password string) {
				t.Helper()
				res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
					Name: name,
					Config: &container.Config{Image: ref, Labels: labels,
						Env: []string{"POSTGRES_USER=notes", "POSTGRES_PASSWORD=" + password, "POSTGRES_DB=notesdb"}},
					HostConfig: &container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: "/var/lib/postgresql/data"}}},
					NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
						nw.ID: {Aliases: []string{"db"}}}},
				})
				if err != nil {
					t.Fatalf("create %s: %v", name, err)
				}
				if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
					t.Fatalf("start %s: %v", name, err)
				}
			}
			ask := func(password, sql string) (int64, string) {
				t.Helper()
				return runOnce(t, cli, app, nw.ID, labels, "python3", "-c", query,
					"postgresql://notes:"+password+"@db:5432/notesdb", sql)
			}

			// As upstream: no password, no database (the image's own empty data directory).
			if code, out := runConfig(t, cli, &container.Config{Image: ref, Labels: labels, Env: []string{"POSTGRES_USER=notes"}}, nw.ID); code != 1 || !strings.Contains(out, "POSTGRES_PASSWORD is not set") {
				t.Fatalf("a first start without POSTGRES_PASSWORD: exit %d\n%s, want refused naming it", code, out)
			}

			server("pg1-"+tok, "first")
			if code, out := ask("first", "SELECT current_user, current_database(), current_setting('listen_addresses')"); code != 0 || !strings.Contains(out, "('notes', 'notesdb', '*')") {
				t.Fatalf("the first start did not make user notes with database notesdb: exit %d\n%s", code, out)
			}
			if code, out := ask("wrong", "SELECT 1"); code != 3 || !strings.Contains(out, "password authentication failed") {
				t.Fatalf("a wrong password over the network: exit %d\n%s, want refused", code, out)
			}
			if code, out := ask("first", "CREATE TABLE kept AS SELECT 42 AS answer"); code != 0 {
				t.Fatalf("create a table: exit %d\n%s", code, out)
			}
			// The server (the postmaster's pid is the first line of postmaster.pid) runs as
			// postgres, and the data directory is its own.
			res, err := cli.ExecCreate(ctx, "pg1-"+tok, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true,
				Cmd: []string{"sh", "-c", `pid=$(head -n 1 "$PGDATA/postmaster.pid"); stat -c '%U %u' /proc/$pid "$PGDATA" "$PGDATA/PG_VERSION"`}})
			if err != nil {
				t.Fatal(err)
			}
			if out := execOutput(t, cli, res.ID); strings.Count(out, "postgres ") != 3 {
				t.Fatalf("owners of the server process, the data directory and its files:\n%s, want postgres for each", out)
			}
			if _, err := cli.ContainerStop(ctx, "pg1-"+tok, client.ContainerStopOptions{}); err != nil {
				t.Fatal(err)
			}

			// Another password now: an initialised directory is not initialised again.
			server("pg2-"+tok, "second")
			if code, out := ask("first", "SELECT answer FROM kept"); code != 0 || !strings.Contains(out, "(42,)") {
				t.Fatalf("the second start on the same volume: exit %d\n%s, want the table of the first", code, out)
			}
		})
	}
}

// runOnce runs argv in a new container of img on network nw and returns its exit code and
// output; the container is removed.
func runOnce(t *testing.T, cli *client.Client, img, nw string, labels map[string]string, argv ...string) (int64, string) {
	t.Helper()
	return runConfig(t, cli, &container.Config{Image: img, User: "1000:1000", Labels: labels, Entrypoint: argv}, nw)
}

// runConfig runs a container of cfg on network nw to its end and returns its exit code and
// output; the container is removed.
func runConfig(t *testing.T, cli *client.Client, cfg *container.Config, nw string) (int64, string) {
	t.Helper()
	ctx := context.Background()
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:           cfg,
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{nw: {}}},
	})
	if err != nil {
		t.Fatalf("create a container of %s: %v", cfg.Image, err)
	}
	defer func() { _, _ = cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) }()
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w := cli.ContainerWait(wctx, res.ID, client.ContainerWaitOptions{})
	var code int64
	select {
	case r := <-w.Result:
		code = r.StatusCode
	case err := <-w.Error:
		t.Fatalf("wait: %v", err)
	}
	logs, err := cli.ContainerLogs(ctx, res.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, logs)
	return code, out.String()
}

// execOutput starts the exec id and returns what it wrote.
func execOutput(t *testing.T, cli *client.Client, id string) string {
	t.Helper()
	att, err := cli.ExecAttach(t.Context(), id, client.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, att.Reader)
	return out.String()
}
