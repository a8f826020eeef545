package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sailtui/sailtui/backends/kubernetes/kubeclient"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/containerexec"
)

// hostExecutor runs the exec's argv on this machine with the mount path rewritten to a temp
// directory, so the shell scripts the runtime sends are run for real by a POSIX sh: what a
// file-manager pod would do with them, minus the API server.
type hostExecutor struct {
	root  string
	calls [][]string
}

func (h *hostExecutor) run(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	h.calls = append(h.calls, argv)
	if len(argv) > 2 && argv[2] == containerexec.KillScript {
		// Scanning every process of this machine is slow and the context's end already killed
		// the command here; the script itself runs for real in the docker runtime's tests.
		return 0, nil
	}
	args := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case a == fileScript:
			a = strings.Replace(a, "root="+MountPath, "root="+h.root, 1)
		case a == MountPath || strings.HasPrefix(a, MountPath+"/"):
			a = h.root + a[len(MountPath):]
		}
		args[i] = a
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		return exit.ExitCode(), nil
	}
	return 0, err
}

// fakeRuntime is a Runtime on a fake API server (fakeAPI) with the project's namespace and
// PVC, a running file-manager pod and a dev pod, and h as its executor.
func fakeRuntime(t *testing.T, h executor) (*Runtime, engine.Project, engine.Container) {
	t.Helper()
	p := engine.Project{ID: "p1", Slug: "demo", Owner: "o"}
	c := engine.Container{ProjectID: p.ID, Name: "web", Directory: "app"}
	// The server's address comes once its objects, named by the config's defaults, are made.
	cfg := Config{REST: &rest.Config{}}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{cfg: cfg, exec: h}
	pod := func(name string, l map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace(p), Labels: l},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	r.cfg.REST = fakeAPI(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace(p)}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: PVCName, Namespace: r.Namespace(p)}},
		pod("fm-1", projectLabels(p, ComponentFileManager)),
		pod("dev-web-1", containerLabels(p, c)),
	)
	var err error
	if r.kube, err = kubeclient.New(r.cfg.REST); err != nil {
		t.Fatal(err)
	}
	return r, p, c
}

func TestFileOpsThroughScripts(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &hostExecutor{root: root}
	r, p, _ := fakeRuntime(t, h)
	ctx := t.Context()

	if err := r.WriteFile(ctx, p, "src/a b.txt", strings.NewReader("hello\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	var buf bytes.Buffer
	if err := r.ReadFile(ctx, p, "src/a b.txt", &buf); err != nil || buf.String() != "hello\n" {
		t.Fatalf("read: %q %v", buf.String(), err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "src", "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	files, err := r.ListFiles(ctx, p, "src")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(files) != 2 || files[0].Path != "src/a b.txt" || files[0].Size != 6 || files[1].Path != "src/leak" ||
		files[1].Target != filepath.Join(outside, "secret") || files[1].Mode[0] != 'L' {
		t.Errorf("list: %+v", files)
	}
	for _, bad := range []struct {
		name string
		err  error
	}{
		{"read through a symlink out", r.ReadFile(ctx, p, "src/leak", io.Discard)},
		{"write through a symlink out", r.WriteFile(ctx, p, "src/leak", strings.NewReader("x"))},
		{"write into a dir symlinked out", r.WriteFile(ctx, p, "out/new.txt", strings.NewReader("x"))},
		{"list a dir symlinked out", func() error { _, err := r.ListFiles(ctx, p, "out"); return err }()},
		{"dot-dot", r.ReadFile(ctx, p, "../etc/passwd", io.Discard)},
		{"absolute", r.WriteFile(ctx, p, "/etc/passwd", strings.NewReader("x"))},
	} {
		if !errors.Is(bad.err, engine.ErrBadPath) {
			t.Errorf("%s: %v, want ErrBadPath", bad.name, bad.err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s3cr3t" {
		t.Errorf("the file outside was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Errorf("a file was created outside the project")
	}
	if err := r.ReadFile(ctx, p, "nope.txt", io.Discard); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("read missing: %v", err)
	}
	if err := r.ReadFile(ctx, p, "src", io.Discard); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("read a directory: %v", err)
	}
	// Deleting a symlink removes the link, not what it points at.
	if err := r.DeleteFile(ctx, p, "src/leak"); err != nil {
		t.Fatalf("delete link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Errorf("deleting the link removed its target: %v", err)
	}
	if err := r.DeleteFile(ctx, p, "src"); err != nil {
		t.Fatalf("delete dir: %v", err)
	}
	if err := r.DeleteFile(ctx, p, "src"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("delete missing: %v", err)
	}
	// Every call passed the path as an argument, never inside the script.
	for _, argv := range h.calls {
		if argv[0] != "sh" || argv[1] != "-c" || argv[2] != fileScript {
			t.Errorf("file op argv %q: want sh -c fileScript ...", argv)
		}
	}
}

func TestExecThroughScript(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "app", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &hostExecutor{root: root}
	r, p, c := fakeRuntime(t, h)
	ctx := t.Context()
	res, err := r.Exec(ctx, p, c, engine.ExecRequest{Argv: []string{"sh", "-c", `printf '%s|' "$@"; pwd; echo "$GREETING"; exit 3`, "sh", "a b", "$HOME", "*"},
		Dir: "sub", Env: map[string]string{"GREETING": "price $5"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "a b|$HOME|*|" + filepath.Join(root, "app", "sub") + "\nprice $5\n"
	if string(res.Stdout) != want || res.ExitCode != 3 {
		t.Errorf("exec: stdout %q exit %d, want %q 3", res.Stdout, res.ExitCode, want)
	}
	res, err = r.Exec(ctx, p, c, engine.ExecRequest{Argv: []string{"no-such-program-here"}})
	if err != nil || res.ExitCode != 127 {
		t.Errorf("missing program: %+v %v, want exit 127", res, err)
	}
	res, err = r.Exec(ctx, p, c, engine.ExecRequest{Argv: []string{"sleep", "30"}, Timeout: 300 * time.Millisecond})
	if err != nil || !res.TimedOut || res.ExitCode != 124 {
		t.Errorf("timeout: %+v %v", res, err)
	}
	last := h.calls[len(h.calls)-1]
	if last[2] != containerexec.KillScript || !strings.HasPrefix(last[4], "SAILTUI_EXEC=") {
		t.Errorf("after a timeout the runtime ran %q, want the kill script with the marker", last)
	}
	if _, err := r.Exec(ctx, p, c, engine.ExecRequest{Argv: []string{"true"}, Dir: "../x"}); !errors.Is(err, engine.ErrBadPath) {
		t.Errorf("exec with Dir ../x: %v", err)
	}
}

// A container whose pod is not running refuses exec with ErrBadState, without an exec.
func TestExecNoPod(t *testing.T) {
	h := &hostExecutor{root: t.TempDir()}
	r, p, _ := fakeRuntime(t, h)
	other := engine.Container{ProjectID: p.ID, Name: "api", Directory: "api"}
	if _, err := r.Exec(t.Context(), p, other, engine.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, engine.ErrBadState) {
		t.Errorf("exec without a pod: %v", err)
	}
	if len(h.calls) != 0 {
		t.Errorf("exec ran %d commands", len(h.calls))
	}
}

// The clone gets the URL on stdin: neither the argv nor the error shows the credential.
func TestCloneKeepsCredentialOffArgv(t *testing.T) {
	h := &hostExecutor{root: t.TempDir()}
	r, p, _ := fakeRuntime(t, h)
	url := "https://user:t0ken@127.0.0.1:1/repo.git"
	err := r.CloneInto(t.Context(), p, "web", url, "")
	if err == nil {
		t.Fatal("clone from a closed port succeeded")
	}
	if strings.Contains(err.Error(), "t0ken") {
		t.Errorf("error shows the credential: %v", err)
	}
	for _, argv := range h.calls {
		if strings.Contains(strings.Join(argv, " "), "t0ken") {
			t.Errorf("argv carries the credential: %q", argv)
		}
	}
}

// The exec request carries argv as one command parameter per element.
func TestExecURL(t *testing.T) {
	kube, err := kubeclient.New(&rest.Config{Host: "https://api.example:6443"})
	if err != nil {
		t.Fatal(err)
	}
	client := kube.CoreV1().RESTClient()
	u := execURL(client, "proj-1", "fm-1", "file-manager", []string{"sh", "-c", "echo $1", "sh", "a b;rm -rf /"}, true, false)
	if u.Path != "/api/v1/namespaces/proj-1/pods/fm-1/exec" {
		t.Errorf("path %s", u.Path)
	}
	q := u.Query()
	if got := q["command"]; strings.Join(got, "|") != "sh|-c|echo $1|sh|a b;rm -rf /" {
		t.Errorf("command params %q", got)
	}
	if q.Get("container") != "file-manager" || q.Get("stdin") != "true" || q.Get("stdout") != "true" || q.Get("stderr") != "true" || q.Get("tty") == "true" {
		t.Errorf("query %v", q)
	}
	// A terminal has one output stream, as kubectl exec -t asks for it.
	q = execURL(client, "proj-1", "dev-1", "dev", []string{"sh"}, true, true).Query()
	if q.Get("tty") != "true" || q.Get("stderr") == "true" || q.Get("stdout") != "true" || q.Get("stdin") != "true" {
		t.Errorf("terminal query %v", q)
	}
}

func TestLogOptions(t *testing.T) {
	for _, tc := range []struct {
		in   engine.LogOptions
		tail int64
		nil_ bool
	}{{engine.LogOptions{Follow: true}, 0, true}, {engine.LogOptions{Tail: 5}, 5, false}, {engine.LogOptions{Tail: -1}, 0, false}, {engine.LogOptions{Timestamps: true}, 0, true}} {
		lo := podLogOptions(tc.in)
		if lo.Container != "dev" || lo.Follow != tc.in.Follow || lo.Timestamps != tc.in.Timestamps || (lo.TailLines == nil) != tc.nil_ || (lo.TailLines != nil && *lo.TailLines != tc.tail) {
			t.Errorf("podLogOptions(%+v) = %+v", tc.in, lo)
		}
	}
}

func TestNames(t *testing.T) {
	long := strings.Repeat("very-long-name-", 6)
	for _, tc := range []struct{ in, want string }{
		{"proj-abc", "proj-abc"},
		{"Proj_ABC", ""},
		{long, ""},
	} {
		got := dnsLabel(tc.in)
		if tc.want != "" && got != tc.want {
			t.Errorf("dnsLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if len(got) > 63 || strings.Trim(got, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") {
			t.Errorf("dnsLabel(%q) = %q is not a DNS label", tc.in, got)
		}
	}
	if dnsLabel(long+"a") == dnsLabel(long+"b") {
		t.Errorf("two long names share a label")
	}
	if v := labelValue("alice@example.com"); v == "alice@example.com" || len(v) > 63 {
		t.Errorf("labelValue kept an invalid value: %q", v)
	}
	r := &Runtime{cfg: Config{AppDomain: "x.io"}}
	h := r.Host(engine.Project{Slug: strings.Repeat("s", 40)}, engine.Container{Name: "web", Directory: strings.Repeat("d", 40)})
	if first, _, _ := strings.Cut(h, "."); len(first) > 63 {
		t.Errorf("host %q has a label over 63", h)
	}
}
