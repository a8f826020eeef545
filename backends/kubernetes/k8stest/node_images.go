package k8stest

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

// The node's images, built with this machine's Docker Engine (nothing can be pulled here)
// and imported into the node's containerd.
const (
	// ImageRepo is the dev-server image: a static sailtui, every applet of a static busybox
	// (the file manager's scripts need find, stat, readlink, timeout...) and tmux, so the dev
	// Deployment's tmux path runs for real. The file manager runs it too. And glibc's getent,
	// so tests resolve names in pods as a glibc app does.
	ImageRepo = "sailtui-test-node-devserver"
	pauseRepo = "sailtui-test-node-pause"
)

// buildImages builds both images (or finds them built) and records their references.
func (n *node) buildImages(ctx context.Context) error {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("the node's images are built with the Docker Engine, which does not answer (%w): start dockerd, or point DOCKER_HOST at one", err)
	}
	dev, err := dockertest.BuildImage(ctx, cli, dockertest.ImageSpec{Repo: ImageRepo, Sailtui: true, Tmux: true, Getent: true})
	if err != nil {
		return fmt.Errorf("dev-server image: %w", err)
	}
	// containerd stops sandboxes with SIGKILL: a sleep that ignores SIGTERM is enough.
	pause, err := dockertest.BuildImage(ctx, cli, dockertest.ImageSpec{Repo: pauseRepo, Applets: []string{},
		Entrypoint: []string{"/bin/busybox", "sleep", "2147483647"}})
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	n.env.Image = "docker.io/library/" + dev
	n.env.PauseImage = "docker.io/library/" + pause
	n.imported = []string{dev, pause}
	return nil
}

// importImages streams `docker save` of each image into `ctr images import`.
func (n *node) importImages(ctx context.Context) error {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	for _, ref := range n.imported {
		rc, err := cli.ImageSave(ctx, []string{ref})
		if err != nil {
			return fmt.Errorf("docker save %s: %w", ref, err)
		}
		cmd := exec.CommandContext(ctx, "/usr/bin/ctr", "--address", n.sock(), "-n", "k8s.io", "images", "import", "-")
		cmd.Stdin = rc
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		_, _ = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("import %s into the node's containerd: %w: %s", ref, err, strings.TrimSpace(out.String()))
		}
	}
	out, err := n.ctr(ctx, "images", "ls", "-q")
	if err != nil {
		return err
	}
	for _, want := range []string{n.env.Image, n.env.PauseImage} {
		if !strings.Contains(out, want) {
			return fmt.Errorf("image %s not in the node's containerd after the import (it has: %s)", want, strings.Join(strings.Fields(out), " "))
		}
	}
	return nil
}

// TagImage gives image ref the second name as in the node's containerd, so that a test can run
// it under a name the runtime treats differently (an official database image's, which starts
// as root).
func (n *Node) TagImage(ctx context.Context, ref, as string) error {
	sock := filepath.Join(n.dir, "containerd", "containerd.sock")
	out, err := exec.CommandContext(ctx, "/usr/bin/ctr", "--address", sock, "-n", "k8s.io", "images", "tag", "--force", ref, as).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tag %s as %s in the node's containerd: %w: %s", ref, as, err, strings.TrimSpace(string(out)))
	}
	return nil
}
