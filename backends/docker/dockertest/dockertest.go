// Package dockertest gives tests the Docker Engine of this machine and an image to run on it.
// Nothing can be pulled here, so the image is built locally: FROM scratch, with a static sailtui
// (its devserver subcommand serves HTTP) and a static busybox (Debian's busybox-static) for sh
// and the few tools the Runtime contract's scripts use.
//
// A test that cannot reach the daemon or build the image fails, loudly: it never skips.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// Label marks everything the tests create: the image with "image", containers and networks
// with the value a test got from Token, so its cleanup removes exactly its own.
const Label = "sailtui.test"

// ImageRepo is the test image's repository; its tag is the content hash of what went in.
const ImageRepo = "sailtui-test-devserver"

// UID and GID are the test image's non-root user ("dev", home /home/dev).
const (
	UID = 1000
	GID = 1000
)

// Applets are the busybox commands linked into the image's /bin. A static glibc cannot use
// the system's name service (busybox's wget crashes on it): nslookup and nc do without (Fetch).
var Applets = []string{
	"sh", "ls", "cat", "echo", "sleep", "mkdir", "rm", "pwd", "env", "head", "tail", "cut", "yes",
	"ln", "nc", "true", "false", "id", "test", "[", "printf", "grep", "tr", "kill", "ps",
	"sed", "nslookup", "touch", "chmod", "mv", "cp", "wc", "sort", "tee", "date", "timeout", "xargs",
	// For a shell on a terminal (exec -it): its size, and what it is called.
	"stty", "tty",
}

// Fetch is a shell snippet for the test image that GETs http://$1:$2$3 and prints the body of
// a 200 answer; it fails when the name does not resolve, nothing answers or the status is not 200.
const Fetch = `case "$1" in
*[!0-9.]*) ip=$(nslookup "$1" 2>/dev/null | sed -n 's/^Address: //p' | tail -n 1) ;;
*) ip=$1 ;;
esac
[ -n "$ip" ] || { echo "cannot resolve $1" >&2; exit 2; }
resp=$(printf 'GET %s HTTP/1.0\r\n\r\n' "$3" | nc -w 3 "$ip" "$2") || exit 3
case "$resp" in "HTTP/1.0 200"*) ;; *) echo "no 200 from $1: $resp" >&2; exit 4;; esac
printf '%s\n' "$resp" | sed '1,/^\r$/d'`

// Client connects to the daemon the environment names (DOCKER_HOST, else the local socket),
// negotiating the API version, and fails the test when the daemon does not answer.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatalf("the Docker Engine is needed for this test and does not answer (%v): start dockerd, or point DOCKER_HOST at one", err)
	}
	return cli
}

// Token returns a fresh value for Label and registers a cleanup that removes every container
// and network carrying it.
func Token(t testing.TB, cli *client.Client) string {
	t.Helper()
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	tok := "t" + hex.EncodeToString(b)
	t.Cleanup(func() { RemoveLabelled(t, cli, Label+"="+tok) })
	return tok
}

// RemoveLabelled force-removes every container, then every network and volume, with the
// label filter (key=value); failures are test errors, so nothing is left behind unnoticed.
func RemoveLabelled(t testing.TB, cli *client.Client, label string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := client.Filters{}.Add("label", label)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Errorf("cleanup: list containers %s: %v", label, err)
		return
	}
	for _, c := range cs.Items {
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("cleanup: remove container %v: %v", c.Names, err)
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Errorf("cleanup: list networks %s: %v", label, err)
		return
	}
	for _, n := range ns.Items {
		if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("cleanup: remove network %s: %v", n.Name, err)
		}
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		t.Errorf("cleanup: list volumes %s: %v", label, err)
		return
	}
	for _, v := range vs.Items {
		if _, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("cleanup: remove volume %s: %v", v.Name, err)
		}
	}
}

var (
	imageMu  sync.Mutex
	imageRef string
)

// Image returns the test image, building it when no image of the same content exists yet.
// Its tag is the hash of everything in it, so repeated runs reuse it and a changed sailtui gets
// a new one; test images over a day old are removed when a new one is built.
func Image(t testing.TB, cli *client.Client) string {
	t.Helper()
	imageMu.Lock()
	defer imageMu.Unlock()
	if imageRef != "" {
		return imageRef
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ref, err := BuildImage(ctx, cli, ImageSpec{Repo: ImageRepo, Applets: Applets, Sailtui: true})
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	imageRef = ref
	return ref
}

// ImageSpec says what goes into an image built FROM scratch around a static busybox. Every
// image gets /etc/passwd and /etc/group with root and the non-root user dev (UID), a home for
// dev and a world-writable /tmp.
type ImageSpec struct {
	Repo string
	// Applets are the busybox commands linked into /bin; nil links every applet this busybox has.
	Applets []string
	// Sailtui puts a static sailtui built from this module at /bin/sailtui.
	Sailtui bool
	// Tmux puts this machine's tmux at /bin/tmux with the shared libraries it links and the
	// terminfo entries it needs, so a script that runs under tmux when it can really does.
	Tmux bool
	// Wget makes the image's HTTP client work as an operator types it (wget -T 5 -O-
	// http://name:port/): this machine's wget (Debian's) at /bin/wget with the shared
	// libraries it links, and Debian's dynamically linked busybox instead of the static one.
	// Debian's busybox 1.35 is built without wget's timeout, and its -T then writes through a
	// null pointer (a segfault); the static build's shell runs its own applet for any applet
	// name whatever PATH holds, so a wget beside it would never be reached by name.
	Wget bool
	// Getent puts this machine's getent (glibc's) at /bin/getent with the shared libraries it
	// links: `getent hosts NAME` resolves as an app linked to glibc does (resolv.conf's search
	// list and ndots), which busybox's nslookup does not for a name with a dot.
	Getent bool
	// Entrypoint, when set, is the image's ENTRYPOINT (exec form).
	Entrypoint []string
	// Labels are added to the image besides Label=image.
	Labels map[string]string
}

// BuildImage builds the image spec describes unless an image of the same content exists, and
// returns its reference (repo:content-hash).
func BuildImage(ctx context.Context, cli *client.Client, spec ImageSpec) (string, error) {
	ctxTar, sum, err := buildContext(spec)
	if err != nil {
		return "", err
	}
	ref := spec.Repo + ":" + sum[:16]
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("inspect %s: %w", ref, err)
	}
	labels := map[string]string{Label: "image"}
	maps.Copy(labels, spec.Labels)
	if err := buildImage(ctx, cli, bytes.NewReader(ctxTar), []string{ref}, labels); err != nil {
		return "", err
	}
	removeOldImages(ctx, cli, spec.Repo, ref)
	return ref, nil
}

// buildResult reads the build's JSON message stream to its end and returns the first error
// it reports.
func buildResult(r io.Reader) error {
	dec := json.NewDecoder(r)
	var log strings.Builder
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read build output: %w", err)
		}
		log.WriteString(msg.Stream)
		if msg.Error != "" {
			return fmt.Errorf("%s\n%s", msg.Error, log.String())
		}
	}
}

func removeOldImages(ctx context.Context, cli *client.Client, repo, keep string) {
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("label", Label+"=image")})
	if err != nil {
		return
	}
	for _, img := range imgs.Items {
		// Another checkout's test run may be using an image of a different sailtui right now
		// (between two of its containers nothing protects it): only images a day old go.
		if time.Since(time.Unix(img.Created, 0)) < 24*time.Hour {
			continue
		}
		old, ours := true, false
		for _, tag := range img.RepoTags {
			if tag == keep {
				old = false
			}
			if strings.HasPrefix(tag, repo+":") {
				ours = true
			}
		}
		if old && ours {
			// Not forced: an image another test run still uses stays until its next build.
			_, _ = cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{PruneChildren: true})
		}
	}
}

// contextEntry is one file of a build context.
type contextEntry struct {
	h    tar.Header
	body []byte
}

// buildContext makes the image's build context (a tar) and the hash that names it.
func buildContext(spec ImageSpec) ([]byte, string, error) {
	// The programs of this machine, with their libraries once however many link them.
	host := hostFiles{dirs: map[string]bool{"rootfs/": true, "rootfs/bin/": true}, files: map[string]bool{}}
	bbPath, err := staticBusyboxPath()
	if spec.Wget {
		if bbPath, err = debianBusyboxPath(); err == nil {
			err = host.addLibraries(bbPath)
		}
	}
	if err != nil {
		return nil, "", err
	}
	busybox, err := os.ReadFile(bbPath)
	if err != nil {
		return nil, "", fmt.Errorf("busybox for the image: %w", err)
	}
	dockerfile := "FROM scratch\nCOPY rootfs/ /\nCOPY --chown=1000:1000 home/ /home/\nENV PATH=/bin\n"
	if len(spec.Entrypoint) > 0 {
		ep, _ := json.Marshal(spec.Entrypoint)
		dockerfile += "ENTRYPOINT " + string(ep) + "\n"
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\ndev:x:1000:1000:dev:/home/dev:/bin/sh\n"
	group := "root:x:0:\ndev:x:1000:\n"
	entries := []contextEntry{
		{tar.Header{Name: "Dockerfile", Typeflag: tar.TypeReg, Mode: 0o644}, []byte(dockerfile)},
		{tar.Header{Name: "rootfs/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "rootfs/bin/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "rootfs/bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755}, busybox},
		{tar.Header{Name: "rootfs/etc/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "rootfs/etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644}, []byte(passwd)},
		{tar.Header{Name: "rootfs/etc/group", Typeflag: tar.TypeReg, Mode: 0o644}, []byte(group)},
		{tar.Header{Name: "rootfs/tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
		{tar.Header{Name: "home/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "home/dev/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
	}
	if spec.Sailtui {
		sailtui, err := buildSailtui()
		if err != nil {
			return nil, "", err
		}
		entries = append(entries, contextEntry{tar.Header{Name: "rootfs/bin/sailtui", Typeflag: tar.TypeReg, Mode: 0o755}, sailtui})
	}
	if spec.Tmux {
		if err := host.addTmux(); err != nil {
			return nil, "", err
		}
	}
	if spec.Wget {
		if err := host.addProgram("wget", "Debian's wget"); err != nil {
			return nil, "", err
		}
	}
	if spec.Getent {
		if err := host.addProgram("getent", "Debian's libc-bin"); err != nil {
			return nil, "", err
		}
	}
	entries = append(entries, host.entries...)
	applets := spec.Applets
	if applets == nil {
		if applets, err = busyboxApplets(bbPath); err != nil {
			return nil, "", err
		}
	}
	for _, a := range applets {
		if host.files["rootfs/bin/"+a] {
			continue // the image's own program, not busybox's
		}
		entries = append(entries, contextEntry{tar.Header{Name: "rootfs/bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}, nil})
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := sha256.New()
	for _, e := range entries {
		e.h.ModTime = time.Unix(0, 0)
		if e.h.Typeflag == tar.TypeReg {
			e.h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&e.h); err != nil {
			return nil, "", fmt.Errorf("build context: %w", err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, "", fmt.Errorf("build context: %w", err)
		}
		fmt.Fprintf(h, "%s %o %s %d\n", e.h.Name, e.h.Mode, e.h.Linkname, len(e.body))
		h.Write(e.body)
	}
	if err := tw.Close(); err != nil {
		return nil, "", fmt.Errorf("build context: %w", err)
	}
	return buf.Bytes(), hex.EncodeToString(h.Sum(nil)), nil
}

// busyboxApplets lists the applets of the static busybox, but those that would shadow a
// program an image carries of its own.
func busyboxApplets(bb string) ([]string, error) {
	out, err := exec.Command(bb, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", bb, err)
	}
	var list []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && a != "sailtui" && a != "tmux" && !strings.Contains(a, "/") {
			list = append(list, a)
		}
	}
	return list, nil
}

// hostFiles collects programs of this machine for an image: each at /bin/<name>, with the
// shared libraries ldd finds for it (each stored at the path the loader looks for it), every
// file and directory once.
type hostFiles struct {
	entries []contextEntry
	dirs    map[string]bool // "rootfs/..." directories made, with a trailing slash
	files   map[string]bool // "rootfs/..." files added
}

// addProgram adds program name (found in PATH; what, for the error, names its package) with
// the shared libraries it links.
func (h *hostFiles) addProgram(name, what string) error {
	bin, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s for the image: %w (install %s)", name, err, what)
	}
	if err := h.add("rootfs/bin/"+name, bin); err != nil {
		return fmt.Errorf("%s for the image: %w", name, err)
	}
	return h.addLibraries(bin)
}

// addLibraries adds the shared libraries ldd finds for the host program bin, and the loader.
func (h *hostFiles) addLibraries(bin string) error {
	name := filepath.Base(bin)
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", bin, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		lib := ""
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0] // the loader itself
		default:
			continue
		}
		if err := h.add("rootfs"+lib, lib); err != nil {
			return fmt.Errorf("%s for the image: %w", name, err)
		}
	}
	return nil
}

// addTmux adds Debian's tmux with its libraries, the C.UTF-8 locale it refuses to start
// without, and the terminfo entries of the terminals it sets up.
func (h *hostFiles) addTmux() error {
	if err := h.addProgram("tmux", "Debian's tmux"); err != nil {
		return err
	}
	var files []string
	// glibc's C.UTF-8 is a directory of data.
	locales, _ := filepath.Glob("/usr/lib/locale/C.utf8/*")
	for _, l := range locales {
		if fi, err := os.Stat(l); err == nil && fi.Mode().IsRegular() {
			files = append(files, l)
		}
	}
	if sub, _ := filepath.Glob("/usr/lib/locale/C.utf8/LC_MESSAGES/*"); len(sub) > 0 {
		files = append(files, sub...)
	}
	for _, dir := range []string{"/lib/terminfo", "/usr/share/terminfo"} {
		for _, name := range []string{"s/screen", "s/screen-256color", "t/tmux", "t/tmux-256color", "x/xterm", "x/xterm-256color", "d/dumb"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				files = append(files, filepath.Join(dir, name))
			}
		}
	}
	for _, f := range files {
		if err := h.add("rootfs"+f, f); err != nil {
			return fmt.Errorf("tmux for the image: %w", err)
		}
	}
	return nil
}

// add stores the host file src (a link followed: a soname link gives the library) at name,
// after the directories above it, unless name is there already.
func (h *hostFiles) add(name, src string) error {
	if h.files[name] {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var parents []string
	for d := filepath.Dir(name); !h.dirs[d+"/"]; d = filepath.Dir(d) {
		h.dirs[d+"/"] = true
		parents = append([]string{d + "/"}, parents...)
	}
	for _, d := range parents {
		h.entries = append(h.entries, contextEntry{tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}, nil})
	}
	h.entries = append(h.entries, contextEntry{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755}, b})
	h.files[name] = true
	return nil
}

// debianBusyboxPath is the busybox of Debian's busybox package (dynamically linked, its shell
// runs programs by PATH), unpacked once into the user's cache directory: the package cannot be
// installed beside busybox-static, which the test image needs, so it is downloaded with
// apt-get download and unpacked with dpkg-deb -x.
func debianBusyboxPath() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("get Debian's busybox: %w", err)
	}
	dir := filepath.Join(cache, "sailtui", "debian-busybox")
	bin := filepath.Join(dir, "bin", "busybox")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("get Debian's busybox: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".debian-busybox-")
	if err != nil {
		return "", fmt.Errorf("get Debian's busybox: %w", err)
	}
	defer os.RemoveAll(tmp)
	download := func() ([]byte, error) {
		get := exec.Command("apt-get", "download", "busybox")
		get.Dir = tmp
		return get.CombinedOutput()
	}
	out, err := download()
	if err != nil && os.Geteuid() == 0 {
		// A fresh machine whose packages were all there (make deps updated nothing) may have
		// no package lists yet: update them once, as make deps would have.
		if uout, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr == nil {
			out, err = download()
		} else {
			out = append(out, uout...)
		}
	}
	if err != nil {
		return "", fmt.Errorf("get Debian's busybox: apt-get download busybox: %w (apt-get update first?)\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "busybox_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("get Debian's busybox: apt-get download busybox left %d packages in %s", len(debs), tmp)
	}
	root := filepath.Join(tmp, "root")
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
		return "", fmt.Errorf("get Debian's busybox: dpkg-deb -x %s: %w\n%s", debs[0], err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "busybox")); err != nil {
		return "", fmt.Errorf("get Debian's busybox: the package has no bin/busybox: %w", err)
	}
	// One rename: a build at the same time that got there first has unpacked the same.
	if err := os.Rename(root, dir); err != nil {
		if _, serr := os.Stat(bin); serr != nil {
			return "", fmt.Errorf("get Debian's busybox: %w", err)
		}
	}
	return bin, nil
}

// staticBusyboxPath is SAILTUI_TEST_BUSYBOX, else the busybox Debian's busybox-static
// installs. A dynamically linked one would not run in a scratch image.
func staticBusyboxPath() (string, error) {
	cands := []string{"/bin/busybox", "/usr/bin/busybox"}
	if p := os.Getenv("SAILTUI_TEST_BUSYBOX"); p != "" {
		cands = []string{p}
	}
	for _, p := range cands {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		_ = f.Close()
		if static {
			return p, nil
		}
	}
	return "", fmt.Errorf("no statically linked busybox at %s: install Debian's busybox-static (apt-get install busybox-static) or set SAILTUI_TEST_BUSYBOX", strings.Join(cands, " or "))
}

// buildSailtui builds a static sailtui from this module's source.
func buildSailtui() ([]byte, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("find the module: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return nil, errors.New("find the module: not inside the sailtui module")
	}
	dir, err := os.MkdirTemp("", "sailtui-image-")
	if err != nil {
		return nil, fmt.Errorf("build a static sailtui: %w", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "sailtui")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/sailtui")
	cmd.Dir = filepath.Dir(gomod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build a static sailtui: %w\n%s", err, out)
	}
	return os.ReadFile(bin)
}

// buildImage builds the image of the build context buildCtx (a tar) with the classic builder,
// tagged with tags (the first names it in errors), and waits for the build's result.
func buildImage(ctx context.Context, cli *client.Client, buildCtx io.Reader, tags []string, labels map[string]string) error {
	res, err := cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags:        tags,
		Remove:      true,
		ForceRemove: true,
		Labels:      labels,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return fmt.Errorf("build %s: %w", tags[0], err)
	}
	defer res.Body.Close()
	if err := buildResult(res.Body); err != nil {
		return fmt.Errorf("build %s: %w", tags[0], err)
	}
	return nil
}
