package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

// TestMakeImage (issue 20, item 6): what `make image` builds is tagged as asked and holds what
// the README promises: sh, the busybox tools, tmux and sailtui's devserver.
func TestMakeImage(t *testing.T) {
	cli := dockertest.Client(t)
	tok := dockertest.Token(t, cli)
	tag := "sailtui-mkimage-test:" + tok
	ctx := t.Context()
	if err := run(ctx, tag); err != nil {
		t.Fatalf("mkimage: %v", err)
	}
	t.Cleanup(func() {
		// Only the tag: the image itself is shared with every later `make image`.
		_, _ = cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{})
	})
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: tag, User: "1000:1000", Labels: map[string]string{dockertest.Label: tok},
			Entrypoint: []string{"sh", "-c", "tmux -V && sailtui devserver --help >/dev/null && echo devserver ok && grep -c . /etc/passwd"}},
	})
	if err != nil {
		t.Fatalf("create a container of %s: %v", tag, err)
	}
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
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
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, logs)
	_ = logs.Close()
	if code != 0 || !strings.Contains(out.String(), "tmux ") || !strings.Contains(out.String(), "devserver ok") {
		t.Fatalf("the image lacks what it promises: exit %d\n%s", code, out.String())
	}
}

// TestMakeImageWget (issue 31, docker item 3): the image's HTTP client works as an operator
// types it, with a timeout and a host name: wget -T 5 -O- http://<container>:<port>/ in one
// started container of the image prints what another one serves on their network. Busybox's
// wget (Debian's busybox-static 1.35) crashed on -T and on host names.
func TestMakeImageWget(t *testing.T) {
	cli := dockertest.Client(t)
	tok := dockertest.Token(t, cli) // its cleanup removes the containers and the network
	tag := "sailtui-mkimage-test:" + tok
	ctx := t.Context()
	if err := run(ctx, tag); err != nil {
		t.Fatalf("mkimage: %v", err)
	}
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{})
	})
	labels := map[string]string{dockertest.Label: tok}
	netRes, err := cli.NetworkCreate(ctx, "wget-"+tok, client.NetworkCreateOptions{Labels: labels})
	if err != nil {
		t.Fatalf("create a network: %v", err)
	}
	start := func(name string, script string) string {
		t.Helper()
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name: name,
			Config: &container.Config{Image: tag, User: "1000:1000", Labels: labels,
				Entrypoint: []string{"sh", "-c", script}},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netRes.ID)},
		})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		return res.ID
	}
	server := "web-" + tok
	start(server, "mkdir -p /tmp/www && echo 'hello from web' > /tmp/www/index.txt && exec sailtui devserver --dir /tmp/www --port 8080")
	// Until the server listens (a connection refused fails at once): then the one fetch that
	// counts, whose output is the test's.
	id := start("client-"+tok, `i=0; until wget -q -T 5 -O /dev/null http://`+server+`:8080/index.txt 2>/dev/null; do
  i=$((i+1)); [ $i -lt 100 ] || { echo "web never answered" >&2; break; }; sleep 0.1
done
wget -T 5 -O- http://`+server+`:8080/index.txt`)
	code, out := waitExit(t, cli, id)
	if code != 0 || !strings.Contains(out, "hello from web\n") {
		t.Fatalf("wget -T 5 -O- http://%s:8080/index.txt in the image: exit %d\n%s", server, code, out)
	}
}

// waitExit waits for container id to exit and returns its exit code and what it wrote.
func waitExit(t *testing.T, cli *client.Client, id string) (int64, string) {
	t.Helper()
	ctx := t.Context()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w := cli.ContainerWait(wctx, id, client.ContainerWaitOptions{})
	var code int64
	select {
	case r := <-w.Result:
		code = r.StatusCode
	case err := <-w.Error:
		t.Fatalf("wait: %v", err)
	}
	logs, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, logs)
	return code, out.String()
}
