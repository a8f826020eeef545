package dockertest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Images from Debian's packages (issue 34): a real PostgreSQL and an app image with python3,
// psycopg2 and node. No registry can be pulled from on these machines, but Debian's mirror is
// reachable, so mmdebstrap makes a root filesystem from this machine's apt sources, `docker
// import` turns it into an image, and a small Dockerfile on top adds the entrypoint, user and
// environment. Building takes minutes (mostly dpkg), so every image is cached by a content key
// (the package list, the hooks, the files and the Dockerfile lines): its tag is the key, and it
// is rebuilt only when the key changes. The imported root filesystem is cached the same way
// (its key is the package list and hooks), so a changed entrypoint rebuilds in seconds.

//go:embed debian/postgres-entrypoint.sh
var debianFiles embed.FS

// DebianSuite is the Debian release the images are made of: this machine's (bookworm), whose
// apt sources mmdebstrap uses when given no mirror.
const DebianSuite = "bookworm"

// LabelImageKey carries an image's content key, besides its tag.
const LabelImageKey = "sailtui.image.key"

// debianRecipeVersion is part of every rootfs key: raising it rebuilds every rootfs when what
// makes one changes outside the DebianRootfs fields and mmdebstrapOptions (this file's code).
const debianRecipeVersion = "1"

// DebianRootfs is a Debian root filesystem made by mmdebstrap (variant minbase: the essential
// packages and apt) with Packages and their dependencies.
type DebianRootfs struct {
	// Name names the rootfs image: sailtui-debian-<Name>:<key>.
	Name     string
	Packages []string
	// Customize are shell scripts mmdebstrap runs after the packages are installed, with the
	// root filesystem's path as $1 (its --customize-hook).
	Customize []string
}

// DebianImage is an image built on a DebianRootfs.
type DebianImage struct {
	Rootfs DebianRootfs
	// Repo is the image's repository; its tags are the content key and Tag.
	Repo string
	// Tag is the name a person uses (sailtui-postgres:15), moved to each new build.
	Tag string
	// Files are put into the build context under their base names, from debianFiles.
	Files []string
	// Dockerfile are the lines after FROM. ${USER:name} is replaced by the numeric uid:gid of
	// the rootfs's user name, as a kubelet needs to check runAsNonRoot.
	Dockerfile []string
}

// postgresRootfs is Debian's PostgreSQL 15 without the cluster its package creates (the
// entrypoint makes one in the data directory) and without LLVM: the JIT is optional (the server
// runs without it when llvmjit.so is missing), and LLVM with z3 is over a third of the image.
var postgresRootfs = DebianRootfs{
	Name:     "postgres",
	Packages: []string{"postgresql-15"},
	Customize: []string{
		`chroot "$1" pg_dropcluster 15 main`,
		`rm -rf "$1"/usr/lib/*/libLLVM-* "$1"/usr/lib/*/libz3.so* "$1"/usr/lib/postgresql/15/lib/llvmjit* "$1"/usr/lib/postgresql/15/lib/bitcode`,
		// The data directory ships with its owner, as upstream's: a new volume at that path is
		// filled from the image, so the non-root variant can write into it.
		`mkdir -p "$1"/var/lib/postgresql/data && chroot "$1" chown postgres:postgres /var/lib/postgresql/data && chmod 700 "$1"/var/lib/postgresql/data`,
	},
}

var postgresDockerfile = []string{
	`ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data LANG=C.UTF-8`,
	`COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh`,
	// The socket's directory, made here: mmdebstrap empties /run at the end of its build.
	`RUN mkdir -p /run/postgresql && chown postgres:postgres /run/postgresql && chmod 3777 /run/postgresql`,
	`EXPOSE 5432`,
	// Fast shutdown, as upstream: SIGTERM's smart shutdown waits for every client to leave.
	`STOPSIGNAL SIGINT`,
	`ENTRYPOINT ["docker-entrypoint.sh"]`,
	`CMD ["postgres"]`,
}

// PostgresImage behaves as the official postgres image does: it starts as root, prepares the
// data directory and runs the server as postgres.
var PostgresImage = DebianImage{
	Rootfs:     postgresRootfs,
	Repo:       "sailtui-postgres",
	Tag:        "15",
	Files:      []string{"postgres-entrypoint.sh"},
	Dockerfile: postgresDockerfile,
}

// PostgresNonRootImage runs as postgres from the start, as bitnami's does (a pod with
// runAsNonRoot): the same root filesystem and entrypoint, with a numeric USER.
var PostgresNonRootImage = DebianImage{
	Rootfs:     postgresRootfs,
	Repo:       "sailtui-postgres-nonroot",
	Tag:        "15",
	Files:      []string{"postgres-entrypoint.sh"},
	Dockerfile: append(slices.Clone(postgresDockerfile), `USER ${USER:postgres}`),
}

// AppImage is the example project's dev-server image (DEVSERVER_IMAGE): python3 with psycopg2
// and node beside what the dev-server image offers a startup command (a POSIX sh, the tools of
// exec's timeout kill, tmux), and the dev user (1000) containers run as.
var AppImage = DebianImage{
	Rootfs: DebianRootfs{
		Name:     "app",
		Packages: []string{"python3", "python3-psycopg2", "nodejs", "tmux", "procps"},
		Customize: []string{
			`echo 'dev:x:1000:1000:dev:/home/dev:/bin/sh' >> "$1"/etc/passwd && echo 'dev:x:1000:' >> "$1"/etc/group && mkdir -p "$1"/home/dev && chown 1000:1000 "$1"/home/dev`,
		},
	},
	Repo: "sailtui-app",
	Tag:  "latest",
	Dockerfile: []string{
		`ENV LANG=C.UTF-8 HOME=/home/dev PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
	},
}

// DebianImages are the images `make images` builds.
var DebianImages = []DebianImage{PostgresImage, PostgresNonRootImage, AppImage}

// key is the rootfs's content key.
func (r DebianRootfs) key() string {
	h := sha256.New()
	fmt.Fprintf(h, "recipe %s\nsuite %s\nname %s\nargs %q\n", debianRecipeVersion, DebianSuite, r.Name, mmdebstrapOptions)
	for _, p := range r.Packages {
		fmt.Fprintf(h, "package %q\n", p)
	}
	for _, c := range r.Customize {
		fmt.Fprintf(h, "customize %q\n", c)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Ref is the rootfs's image reference.
func (r DebianRootfs) Ref() string { return "sailtui-debian-" + r.Name + ":" + r.key() }

// Key is the image's content key: its rootfs's, its files and its Dockerfile lines.
func (img DebianImage) Key() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "rootfs %s\n", img.Rootfs.Ref())
	for _, name := range img.Files {
		b, err := debianFiles.ReadFile("debian/" + name)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", img.Repo, err)
		}
		fmt.Fprintf(h, "file %q %d\n", name, len(b))
		h.Write(b)
	}
	for _, l := range img.Dockerfile {
		fmt.Fprintf(h, "line %q\n", l)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Ref is the image's keyed reference, repo:key, which never moves (tests use it).
func (img DebianImage) Ref() (string, error) {
	key, err := img.Key()
	if err != nil {
		return "", err
	}
	return img.Repo + ":" + key, nil
}

// mmdebstrapOptions are the options of every rootfs build: minbase; no documentation, manual
// pages or translations; dpkg without its fsync after every file (the tar is written once at the
// end, a crash only loses a build); the essential packages' .debs kept for the package cache.
var mmdebstrapOptions = []string{
	"--variant=minbase",
	"--skip=essential/unlink",
	"--dpkgopt=force-unsafe-io",
	"--dpkgopt=path-exclude=/usr/share/man/*",
	"--dpkgopt=path-exclude=/usr/share/doc/*",
	"--dpkgopt=path-include=/usr/share/doc/*/copyright",
	"--dpkgopt=path-exclude=/usr/share/locale/*",
	"--dpkgopt=path-exclude=/usr/share/info/*",
}

// DebianImageFor builds img unless an image of its key exists, tags it with its Tag too, and
// returns its keyed reference. log receives mmdebstrap's progress (nil: kept only for an
// error). Builds on this machine are serialised by a lock file, so two test binaries wanting
// the same image build it once.
func DebianImageFor(ctx context.Context, cli *client.Client, img DebianImage, log io.Writer) (string, error) {
	ref, err := img.Ref()
	if err != nil {
		return "", err
	}
	if ok, err := imageExists(ctx, cli, ref); err != nil || ok {
		if ok {
			err = tagImage(ctx, cli, ref, img.Repo+":"+img.Tag)
		}
		return ref, err
	}
	cache, err := debianCacheDir()
	if err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, filepath.Join(cache, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have built it while this one waited.
	if ok, err := imageExists(ctx, cli, ref); err != nil || ok {
		if ok {
			err = tagImage(ctx, cli, ref, img.Repo+":"+img.Tag)
		}
		return ref, err
	}
	users, err := debianRootfsImage(ctx, cli, img.Rootfs, cache, log)
	if err != nil {
		return "", err
	}
	key, _ := img.Key()
	dockerfile := "FROM " + img.Rootfs.Ref() + "\n"
	for _, l := range img.Dockerfile {
		for name, ids := range users {
			l = strings.ReplaceAll(l, "${USER:"+name+"}", ids)
		}
		if strings.Contains(l, "${USER:") {
			return "", fmt.Errorf("image %s: %q names a user the root filesystem has not", img.Repo, l)
		}
		dockerfile += l + "\n"
	}
	entries := []contextEntry{{tar.Header{Name: "Dockerfile", Typeflag: tar.TypeReg, Mode: 0o644}, []byte(dockerfile)}}
	for _, name := range img.Files {
		b, err := debianFiles.ReadFile("debian/" + name)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", img.Repo, err)
		}
		entries = append(entries, contextEntry{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755}, b})
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		e.h.Size = int64(len(e.body))
		e.h.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(&e.h); err != nil {
			return "", fmt.Errorf("build context: %w", err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return "", fmt.Errorf("build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("build context: %w", err)
	}
	if err := buildImage(ctx, cli, &buf, []string{ref, img.Repo + ":" + img.Tag},
		map[string]string{LabelImageKey: key, "org.opencontainers.image.title": img.Repo}); err != nil {
		return "", err
	}
	// The builds this one replaces, children first (a rootfs with images on it stays).
	removeStale(ctx, cli, img.Repo, ref)
	removeStale(ctx, cli, "sailtui-debian-"+img.Rootfs.Name, img.Rootfs.Ref())
	return ref, nil
}

// removeStale removes the images of repo but keep that carry LabelImageKey and are a day old:
// every new key leaves the build before it behind (a few hundred MB each). Not forced, and
// only a day old: another checkout's test run may be using an image of another key right
// now, and the engine refuses to remove one a container or another image is made from.
func removeStale(ctx context.Context, cli *client.Client, repo, keep string) {
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("label", LabelImageKey)})
	if err != nil {
		return
	}
	for _, img := range imgs.Items {
		if time.Since(time.Unix(img.Created, 0)) < 24*time.Hour || len(img.RepoTags) == 0 {
			continue
		}
		ours := true
		for _, tag := range img.RepoTags {
			if tag == keep || !strings.HasPrefix(tag, repo+":") {
				ours = false
			}
		}
		if ours {
			_, _ = cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{PruneChildren: true})
		}
	}
}

// LabelUserPrefix labels a rootfs image with each user of its /etc/passwd: the label
// sailtui.user.<name> is "uid:gid".
const LabelUserPrefix = "sailtui.user."

// debianRootfsImage makes the rootfs image of r unless it exists, and returns the users of its
// /etc/passwd (name to "uid:gid").
func debianRootfsImage(ctx context.Context, cli *client.Client, r DebianRootfs, cache string, log io.Writer) (map[string]string, error) {
	ref := r.Ref()
	ins, err := cli.ImageInspect(ctx, ref)
	if err == nil {
		users := map[string]string{}
		if ins.Config != nil {
			for k, v := range ins.Config.Labels {
				if name, ok := strings.CutPrefix(k, LabelUserPrefix); ok {
					users[name] = v
				}
			}
		}
		return users, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("inspect %s: %w", ref, err)
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return nil, fmt.Errorf("the Debian images need mmdebstrap: %w (apt-get install mmdebstrap, or make deps)", err)
	}
	tmp, err := os.MkdirTemp("", "sailtui-rootfs-")
	if err != nil {
		return nil, fmt.Errorf("rootfs %s: %w", r.Name, err)
	}
	defer os.RemoveAll(tmp)
	debs := filepath.Join(cache, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return nil, fmt.Errorf("package cache: %w", err)
	}
	if strings.ContainsAny(debs, `'"\$`+"`") {
		return nil, fmt.Errorf("package cache %q: a path with quotes or $ cannot go into mmdebstrap's hooks", debs)
	}
	out := filepath.Join(tmp, "rootfs.tar")
	args := slices.Clone(mmdebstrapOptions)
	args = append(args,
		"--include="+strings.Join(r.Packages, ","),
		// The package cache: what an earlier build downloaded is not downloaded again (apt
		// checks each .deb against the index before it uses it).
		`--setup-hook=mkdir -p "$1"/var/cache/apt/archives && find '`+debs+`' -name '*.deb' -exec cp -t "$1"/var/cache/apt/archives/ {} +`,
	)
	for _, c := range r.Customize {
		args = append(args, "--customize-hook="+c)
	}
	args = append(args,
		`--customize-hook=find "$1"/var/cache/apt/archives -maxdepth 1 -name '*.deb' -exec cp -n -t '`+debs+`' {} +`,
		DebianSuite, out)
	var msgs bytes.Buffer
	var w io.Writer = &msgs
	if log != nil {
		w = io.MultiWriter(&msgs, log)
	}
	cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		tail := msgs.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		hint := ""
		if os.Geteuid() != 0 {
			// Checked on these machines as root only: not root, mmdebstrap takes its unshare
			// mode, which needs a subordinate id range (/etc/subuid) these machines lack.
			hint = "\n(not root: mmdebstrap needs a range in /etc/subuid and /etc/subgid for its unshare mode; or build as root: sudo make images)"
		}
		return nil, fmt.Errorf("mmdebstrap for the %s rootfs: %w\n%s%s", r.Name, err, tail, hint)
	}
	users, err := tarUsers(out)
	if err != nil {
		return nil, err
	}
	changes := []string{"LABEL " + LabelImageKey + "=" + r.key()}
	for _, name := range slices.Sorted(maps.Keys(users)) {
		changes = append(changes, "LABEL "+LabelUserPrefix+name+"="+users[name])
	}
	f, err := os.Open(out)
	if err != nil {
		return nil, fmt.Errorf("rootfs %s: %w", r.Name, err)
	}
	defer f.Close()
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: f, SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", ref, err)
	}
	defer res.Close()
	if err := pullResult(res); err != nil {
		return nil, fmt.Errorf("import %s: %w", ref, err)
	}
	return users, nil
}

// pullResult reads an import's JSON message stream to its end and returns the error it reports.
func pullResult(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, `"error"`) {
			return errors.New(line)
		}
	}
	return sc.Err()
}

// tarUsers reads /etc/passwd of a root filesystem tar: name to "uid:gid".
func tarUsers(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the rootfs's users: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("read the rootfs's users: no /etc/passwd in it")
		}
		if err != nil {
			return nil, fmt.Errorf("read the rootfs's users: %w", err)
		}
		if strings.TrimPrefix(h.Name, ".") != "/etc/passwd" && h.Name != "etc/passwd" {
			continue
		}
		users := map[string]string{}
		sc := bufio.NewScanner(tr)
		for sc.Scan() {
			f := strings.Split(sc.Text(), ":")
			if len(f) >= 4 && f[0] != "" {
				users[f[0]] = f[2] + ":" + f[3]
			}
		}
		return users, sc.Err()
	}
}

func imageExists(ctx context.Context, cli *client.Client, ref string) (bool, error) {
	_, err := cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("inspect %s: %w", ref, err)
	}
}

func tagImage(ctx context.Context, cli *client.Client, src, target string) error {
	if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: src, Target: target}); err != nil {
		return fmt.Errorf("tag %s as %s: %w", src, target, err)
	}
	return nil
}

// debianCacheDir holds the package cache and the build lock: <user cache>/sailtui/debian.
func debianCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache directory for the Debian images: %w", err)
	}
	dir := filepath.Join(base, "sailtui", "debian")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache directory for the Debian images: %w", err)
	}
	return dir, nil
}

// lockFile takes an exclusive flock on path, waiting for it while ctx lasts; the lock goes
// with the process, so one that died holds nothing.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("build lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for another build of the Debian images (%s): %w", path, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// DebianImageT returns img's keyed reference for a test, building it when missing (minutes the
// first time on this machine: mmdebstrap); a test that cannot have it fails.
func DebianImageT(t testing.TB, cli *client.Client, img DebianImage) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	ref, err := DebianImageFor(ctx, cli, img, nil)
	if err != nil {
		t.Fatalf("image %s from Debian's packages: %v", img.Repo, err)
	}
	return ref
}
