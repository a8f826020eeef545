package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/capped"
)

// ArchiveVolumes is the engine.Volumes of clusters without CSI snapshots (or with
// K8S_USE_S3_SNAPSHOTS=true): the "S3 sandwich" of DESIGN.md run through the file-manager pod.
// The pod only ever runs `tar` with argv and a small shell script; compression, hashing,
// validation and the object store all stay in the sailtui process, so the store's credentials
// never reach a pod.
//
// Archives have engine/archive's format (a GNU tar stream in zstd frames: names as raw bytes,
// directories with a trailing slash, permission bits, mtimes to the second, no owners, no hard
// links), and the objects are archive.Objects, as archive.Sandwich's: the same keys and Backend
// name, so a snapshot made by either is restored by either. WaitReady, Delete and the
// inventory and leftover capabilities are archive.Objects' own: they only touch the object
// store.
type ArchiveVolumes struct {
	archive.Objects
	rt   *Runtime
	opts archive.SandwichOptions
	// podTimeout bounds the wait for a file-manager pod created by Restore.
	podTimeout time.Duration
}

var (
	_ engine.Volumes          = (*ArchiveVolumes)(nil)
	_ engine.ArchiveInventory = (*ArchiveVolumes)(nil)
	_ engine.LeftoverCleaner  = (*ArchiveVolumes)(nil)
)

// NewArchiveVolumes returns the archive Volumes of rt's cluster, keeping archives in store.
func NewArchiveVolumes(rt *Runtime, store engine.ObjectStore, opts archive.SandwichOptions) *ArchiveVolumes {
	return &ArchiveVolumes{
		Objects:    archive.NewObjects(store, opts.Prefix),
		rt:         rt,
		opts:       opts,
		podTimeout: 5 * time.Minute,
	}
}

// Name implements engine.Volumes: the same as archive.Sandwich, the two are interchangeable.
func (a *ArchiveVolumes) Name() string { return archive.BackendName }

// Names of the sailtui directories a restore makes at the top of the mount. The swap script
// recognises leftovers by them; archives never hold top-level entries with these names.
const (
	restoreDirPrefix = ".sailtui-restore-" // being extracted, not yet verified
	inDirPrefix      = ".sailtui-in-"      // verified, being moved into place
	oldDirPrefix     = ".sailtui-old-"     // the replaced tree, removed at the end
)

func reservedTopName(name string) bool {
	top, _, _ := strings.Cut(name, "/")
	return strings.HasPrefix(top, restoreDirPrefix) || strings.HasPrefix(top, inDirPrefix) || strings.HasPrefix(top, oldDirPrefix)
}

// restoreToken is the part of the sailtui directory names that identifies a restore: the
// snapshot id when it is made of safe characters, a hash of it otherwise.
func restoreToken(id string) string {
	ok := id != "" && len(id) <= 100
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			ok = false
		}
	}
	if ok && id != "." && id != ".." {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h" + hex.EncodeToString(sum[:12])
}

// swapScript manages the restore directories in the file-manager pod. $1 is the mount, $2 the
// operation, $3 the restore token. Paths are arguments, never script text.
//
//	prepare  finish or clear what an interrupted restore left (see recover), then make the
//	         empty extraction directory .sailtui-restore-<token>
//	commit   swap the verified tree in .sailtui-restore-<token> into the mount
//	abort    remove .sailtui-restore-<token>
//	recover  finish or clear every leftover
//
// The swap ("forward") goes in two phases with one rename between them:
//
//	A: every top-level entry of the mount except sailtui's directories is moved into
//	   .sailtui-old-<token>; then .sailtui-restore-<token> is renamed .sailtui-in-<token>
//	B: every entry of .sailtui-in-<token> is moved into the mount; the empty directory goes;
//	   then .sailtui-old-<token> is removed
//
// Crash windows, and what the next prepare/recover (every Restore and every Create starts
// with one) does about them:
//   - during extraction or verification: only .sailtui-restore-<token> exists; it may be
//     incomplete or unverified, so it is removed and the mount is as it was.
//   - in phase A: .sailtui-restore-<token> (verified: phase A starts only after the checksum
//     matched) and .sailtui-old-<token> both exist, the mount holds part of the old tree;
//     rolled forward (the remaining old entries are moved aside, then phase B).
//   - in phase B: .sailtui-in-<token> exists, the mount holds part of the new tree and nothing
//     of the old one; rolled forward.
//   - while removing the old tree: only .sailtui-old-<token> is left; removed.
//
// Every step is a rename of one entry within one filesystem, so a crash never leaves an entry
// half-moved, and rolling forward never moves an entry twice. Where the image has sync, the
// filesystem is flushed before phase A (the extracted tree is on disk before anything of the
// old one moves) and before the old tree is removed (the renames are on disk first), as
// archive.Sandwich does with syncfs.
const swapScript = `root="$1"; op="$2"; tok="${3-}"
R=.sailtui-restore-; I=.sailtui-in-; O=.sailtui-old-
die() { echo "$*" >&2; exit 1; }
ours() { case "$1" in "$R"*|"$I"*|"$O"*) return 0;; esac; return 1; }
purge() {
  { [ -e "$1" ] || [ -L "$1" ]; } || return 0
  rm -rf -- "$1" 2>/dev/null && return 0
  chmod -R u+rwx -- "$1" 2>/dev/null; rm -rf -- "$1" || die "cannot remove $1"
}
flush() { command -v sync >/dev/null 2>&1 || return 0; sync -f "$root" 2>/dev/null || sync; }
forward() {
  ft="$root/$R$1"; fn="$root/$I$1"; fo="$root/$O$1"
  if [ -d "$ft" ]; then
    flush
    mkdir -p -- "$fo" || die "cannot make $fo"
    for ff in "$root"/* "$root"/.[!.]* "$root"/..?*; do
      { [ -e "$ff" ] || [ -L "$ff" ]; } || continue
      ours "${ff##*/}" && continue
      mv -- "$ff" "$fo/" || die "cannot move $ff aside"
    done
    mv -- "$ft" "$fn" || die "cannot rename $ft"
  fi
  if [ -d "$fn" ]; then
    for ff in "$fn"/* "$fn"/.[!.]* "$fn"/..?*; do
      { [ -e "$ff" ] || [ -L "$ff" ]; } || continue
      fd="$root/${ff##*/}"
      purge "$fd"
      mv -- "$ff" "$fd" || die "cannot move $ff in"
    done
    rmdir -- "$fn" || die "cannot remove $fn"
    flush
  fi
  purge "$fo"
}
recover() {
  for rf in "$root/$I"*; do [ -d "$rf" ] && forward "${rf#"$root/$I"}"; done
  for rf in "$root/$O"*; do
    { [ -e "$rf" ] || [ -L "$rf" ]; } || continue
    rt="${rf#"$root/$O"}"
    if [ -d "$root/$R$rt" ]; then forward "$rt"; else purge "$rf"; fi
  done
  for rf in "$root/$R"*; do purge "$rf"; done
}
[ -d "$root" ] || die "$root is not a directory"
case "$op" in
prepare) recover; mkdir -- "$root/$R$tok" || die "cannot make $root/$R$tok" ;;
commit) { [ -d "$root/$R$tok" ] || [ -d "$root/$I$tok" ]; } || die "no restored tree for $tok"; forward "$tok" ;;
abort) purge "$root/$R$tok" ;;
recover) recover ;;
*) die "unknown operation $op" ;;
esac`

// hardLinkScript prints the size of the regular file $2 (a path under the mount $1) on one
// line, then its contents. Create uses it to store a hard link as the file it names, as
// archive.Write does.
const hardLinkScript = `root=$(readlink -f "$1") || exit 1
r=$(readlink -f "$2" 2>/dev/null) || exit 87
case "$r" in "$root"/*) ;; *) echo "$2 leaves the project" >&2; exit 86;; esac
[ -f "$r" ] || exit 87
stat -c %s "$r" || exit 1
exec cat "$r"`

// mount is a volume as the pod that holds it for an archive sees it: the project's storage in
// the file manager, or a service's data volume in its volume pod (see archive_parts.go).
type mount struct {
	pod, container string
	// dir is where the volume is mounted in the pod.
	dir string
	// owners: the entries keep their numeric owners both ways (a service's data, whose
	// server refuses files of another user), as archive.Sandwich does for service volumes.
	owners bool
	// what names the pod in errors.
	what string
}

// fileManagerMount is the project's storage in the file-manager pod.
func (a *ArchiveVolumes) fileManagerMount(pod string) mount {
	return mount{pod: pod, container: FileManagerName, dir: a.rt.cfg.MountPath, what: "the file manager"}
}

// volumeScript runs swapScript on m.
func (r *Runtime) volumeScript(ctx context.Context, ns string, m mount, op, token string) error {
	var stderr capped.Buffer
	stderr.Max = 4096
	code, err := r.exec.run(ctx, ns, m.pod, m.container, []string{"sh", "-c", swapScript, "sh", m.dir, op, token}, nil, io.Discard, &stderr)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", op, m.what, err)
	}
	if code != 0 {
		return fmt.Errorf("%s in %s: exit %d: %s", op, m.what, code, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// execResult is the end of an exec run in the background.
type execResult struct {
	done chan struct{}
	err  error
}

// startExec runs argv in m's pod in the background. When it ends, its result is set before
// done is closed, then whenEnded runs (closing the pipes it fed).
func (r *Runtime) startExec(ctx context.Context, ns string, m mount, argv []string, stdin io.Reader, stdout io.Writer, whenEnded func(error)) *execResult {
	res := &execResult{done: make(chan struct{})}
	go func() {
		var stderr capped.Buffer
		stderr.Max = 4096
		code, err := r.exec.run(ctx, ns, m.pod, m.container, argv, stdin, stdout, &stderr)
		if err == nil && code != 0 {
			err = fmt.Errorf("%s in %s: exit %d: %s", argv[0], m.what, code, strings.TrimSpace(stderr.String()))
		} else if err != nil {
			err = fmt.Errorf("%s in %s: %w", argv[0], m.what, err)
		}
		res.err = err
		close(res.done)
		whenEnded(err)
	}()
	return res
}

func (r *execResult) wait() error {
	<-r.done
	return r.err
}

// ensurePod returns the running file-manager pod, creating the project's storage (namespace,
// PVC, file manager) when it is missing and waiting for the pod. EnsureProject leaves the PVC
// to the restore while a project is restoring (VolumeSnapshots need to make it from the
// snapshot); an archive restores into a plain one, so it is asked for everything.
func (a *ArchiveVolumes) ensurePod(ctx context.Context, p engine.Project) (string, error) {
	if pod, err := a.rt.fileManagerPod(ctx, p); err == nil {
		return pod, nil
	}
	q := p
	if q.Status == engine.StatusRestoring {
		q.Status = engine.StatusActive
	}
	if err := a.rt.EnsureProject(ctx, q); err != nil {
		return "", err
	}
	if err := a.waitFileManager(ctx, p); err != nil {
		return "", err
	}
	return a.rt.fileManagerPod(ctx, p)
}

// waitFileManager watches p's pods until a file-manager pod runs, up to podTimeout.
func (a *ArchiveVolumes) waitFileManager(ctx context.Context, p engine.Project) error {
	ns := a.rt.Namespace(p)
	want := labels.Set{LabelProjectID: labelValue(p.ID), LabelComponent: ComponentFileManager}
	sel := want.String()
	pods := a.rt.kube.CoreV1().Pods(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			o.LabelSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	running := func(obj any) bool {
		pod, ok := obj.(*corev1.Pod)
		return ok && labels.SelectorFromSet(want).Matches(labels.Set(pod.Labels)) &&
			pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning
	}
	wctx, cancel := context.WithTimeout(ctx, a.podTimeout)
	defer cancel()
	_, err := watchtools.UntilWithSync(wctx, lw, &corev1.Pod{}, func(store cache.Store) (bool, error) {
		for _, obj := range store.List() {
			if running(obj) {
				return true, nil
			}
		}
		return false, nil
	}, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Added, watch.Modified:
			return running(ev.Object), nil
		case watch.Error:
			return false, apierrors.FromObject(ev.Object)
		}
		return false, nil
	})
	return waitErr(ctx, wctx, err, "file-manager pod in", ns, a.podTimeout)
}

var _ engine.ServiceVolumes = (*ArchiveVolumes)(nil)

// CapturesServiceVolumes implements engine.ServiceVolumes: each service's data PVC is archived
// through a volume pod of its own (archive_parts.go).
func (a *ArchiveVolumes) CapturesServiceVolumes() bool { return true }
