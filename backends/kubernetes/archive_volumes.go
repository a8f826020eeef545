package kubernetes

import (
	"archive/tar"
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
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
	"github.com/sailtui/sailtui/engine/stream"
)

// ArchiveVolumes is the engine.Volumes of clusters without CSI snapshots (or with
// K8S_USE_S3_SNAPSHOTS=true): the "S3 sandwich" of DESIGN.md run through the file-manager pod.
// The pod only ever runs `tar` with argv and a small shell script; compression, hashing,
// validation and the object store all stay in the sailtui process, so the store's credentials
// never reach a pod.
//
// Archives have engine/archive's format (a GNU tar stream in zstd frames: names as raw bytes,
// directories with a trailing slash, permission bits, mtimes to the second, no owners, no hard
// links), the same object keys and the same Backend name as archive.Sandwich, so a snapshot
// made by either is restored by either. WaitReady and Delete are Sandwich's own: they only
// touch the object store.
type ArchiveVolumes struct {
	rt    *Runtime
	store engine.ObjectStore
	sw    *archive.Sandwich
	opts  archive.SandwichOptions
	// podTimeout bounds the wait for a file-manager pod created by Restore.
	podTimeout time.Duration
}

var _ engine.Volumes = (*ArchiveVolumes)(nil)

// NewArchiveVolumes returns the archive Volumes of rt's cluster, keeping archives in store.
func NewArchiveVolumes(rt *Runtime, store engine.ObjectStore, opts archive.SandwichOptions) *ArchiveVolumes {
	return &ArchiveVolumes{
		rt:         rt,
		store:      store,
		sw:         archive.NewSandwich(store, nil, opts), // Key, WaitReady and Delete never use dirs
		opts:       opts,
		podTimeout: 5 * time.Minute,
	}
}

// Name implements engine.Volumes: the same as archive.Sandwich, the two are interchangeable.
func (a *ArchiveVolumes) Name() string { return archive.BackendName }

// Key is the object key of a snapshot (archive.Sandwich's).
func (a *ArchiveVolumes) Key(owner, projectID, snapshotID string) (string, error) {
	return a.sw.Key(owner, projectID, snapshotID)
}

// WaitReady implements engine.Volumes: the object is read back and its SHA-256 compared.
func (a *ArchiveVolumes) WaitReady(ctx context.Context, snap engine.Snapshot) (engine.Snapshot, error) {
	return a.sw.WaitReady(ctx, snap)
}

// Delete implements engine.Volumes; deleting a snapshot whose object is gone succeeds.
func (a *ArchiveVolumes) Delete(ctx context.Context, snap engine.Snapshot) error {
	return a.sw.Delete(ctx, snap)
}

// Archives and ArchiveKey implement engine.ArchiveInventory (the doctor's look at the bucket),
// RemoveLeftovers engine.LeftoverCleaner (the purge's): the objects are archive.Sandwich's.
func (a *ArchiveVolumes) Archives(ctx context.Context) ([]engine.ObjectInfo, error) {
	return a.sw.Archives(ctx)
}

func (a *ArchiveVolumes) ArchiveKey(snap engine.Snapshot) (string, error) {
	return a.sw.ArchiveKey(snap)
}

func (a *ArchiveVolumes) RemoveLeftovers(ctx context.Context, cutoff time.Time) (engine.Leftovers, error) {
	return a.sw.RemoveLeftovers(ctx, cutoff)
}

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

// script runs swapScript in pod.
func (a *ArchiveVolumes) script(ctx context.Context, ns, pod, op, token string) error {
	var stderr capped.Buffer
	stderr.Max = 4096
	code, err := a.rt.exec.run(ctx, ns, pod, FileManagerName, []string{"sh", "-c", swapScript, "sh", MountPath, op, token}, nil, io.Discard, &stderr)
	if err != nil {
		return fmt.Errorf("%s in the file manager: %w", op, err)
	}
	if code != 0 {
		return fmt.Errorf("%s in the file manager: exit %d: %s", op, code, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// execResult is the end of an exec run in the background.
type execResult struct {
	done chan struct{}
	err  error
}

// startExec runs argv in pod in the background. When it ends, its result is set before done
// is closed, then whenEnded runs (closing the pipes it fed).
func (a *ArchiveVolumes) startExec(ctx context.Context, ns, pod string, argv []string, stdin io.Reader, stdout io.Writer, whenEnded func(error)) *execResult {
	res := &execResult{done: make(chan struct{})}
	go func() {
		var stderr capped.Buffer
		stderr.Max = 4096
		code, err := a.rt.exec.run(ctx, ns, pod, FileManagerName, argv, stdin, stdout, &stderr)
		if err == nil && code != 0 {
			err = fmt.Errorf("%s in the file manager: exit %d: %s", argv[0], code, strings.TrimSpace(stderr.String()))
		} else if err != nil {
			err = fmt.Errorf("%s in the file manager: %w", argv[0], err)
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

// Create implements engine.Volumes. `tar -c` runs in the file-manager pod; its output is read
// here entry by entry, normalised to archive.Write's form (exclusions applied, special files
// dropped, hard links stored as the files they name), compressed, hashed and streamed into
// store.Put: memory stays bounded whatever the size of the project. A failed tar (a non-zero
// exit included), a failed compression or a failed Put leaves no object.
func (a *ArchiveVolumes) Create(ctx context.Context, p engine.Project, snap engine.Snapshot, progress engine.ProgressFunc) (engine.Snapshot, error) {
	fail := func(err error) (engine.Snapshot, error) {
		return snap, fmt.Errorf("archive: create snapshot %s of project %s: %w", snap.ID, p.ID, err)
	}
	key, err := a.Key(p.Owner, p.ID, snap.ID)
	if err != nil {
		return fail(err)
	}
	m, err := archive.NewExcluder(a.opts.Exclude)
	if err != nil {
		return fail(err)
	}
	// No storage is no snapshot (invariant 1): a missing pod is an error, never an empty archive.
	pod, err := a.rt.fileManagerPod(ctx, p)
	if err != nil {
		return fail(err)
	}
	ns := a.rt.Namespace(p)
	// A restore interrupted in its swap has part of the tree in a sailtui directory, which
	// archives leave out: finish it first, so the snapshot holds the whole tree.
	if err := a.script(ctx, ns, pod, "recover", ""); err != nil {
		return fail(err)
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tarR, tarW := io.Pipe()
	x := a.startExec(cctx, ns, pod, []string{"tar", "-c", "-f", "-", "-C", MountPath, "."}, nil, tarW,
		func(err error) { tarW.CloseWithError(err) })

	objR, objW := io.Pipe()
	out := stream.NewHashWriter(objW, sha256.New())
	pk := &packer{ctx: cctx, a: a, ns: ns, pod: pod, m: m, exec: x, progress: progress, p: p, op: snap.Type.TakenBy()}
	perrc := make(chan error, 1)
	go func() {
		err := pk.pack(tarR, out)
		// As in archive.Sandwich: the result is there before the pipe closes, and an error
		// reaches Put as a read error, so a failed archive is never stored as complete.
		perrc <- err
		objW.CloseWithError(err)
	}()
	info, putErr := a.store.Put(ctx, key, objR)
	if putErr != nil {
		cancel()
		objR.CloseWithError(putErr)
	}
	perr := <-perrc
	if perr != nil || putErr != nil {
		cancel()
		tarR.CloseWithError(errors.New("archive abandoned"))
	}
	_ = x.wait()
	switch {
	case perr != nil:
		if putErr == nil {
			_ = a.store.Delete(context.WithoutCancel(ctx), key)
		}
		return fail(perr)
	case putErr != nil:
		return fail(fmt.Errorf("store %s: %w", key, putErr))
	case info.Size != out.N():
		_ = a.store.Delete(context.WithoutCancel(ctx), key)
		return fail(fmt.Errorf("store %s kept %d bytes of %d: %w", key, info.Size, out.N(), engine.ErrChecksum))
	}
	snap.Location = key
	snap.SizeBytes = out.N()
	snap.UnpackedBytes = pk.done
	snap.SHA256 = hex.EncodeToString(out.Sum())
	snap.Backend = archive.BackendName
	return snap, nil
}

// packer turns the pod's tar stream into an archive.
type packer struct {
	ctx      context.Context
	a        *ArchiveVolumes
	ns, pod  string
	m        archive.Excluder
	exec     *execResult
	progress engine.ProgressFunc
	p        engine.Project
	op       engine.OpKind
	done     int64
	reported int64
}

func (pk *packer) pack(src io.Reader, dst io.Writer) error {
	enc, err := zstd.NewWriter(dst,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithWindowSize(1<<20),
	)
	if err != nil {
		return err
	}
	err = pk.entries(tar.NewReader(src), tar.NewWriter(enc), src)
	if err != nil {
		// Drop what is buffered rather than finish the stream around a truncated tree.
		enc.Reset(io.Discard)
		_ = enc.Close()
		return err
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("compress: %w", err)
	}
	if pk.progress != nil {
		pk.progress(engine.Progress{ProjectID: pk.p.ID, Op: pk.op, Phase: "archive", Done: pk.done})
	}
	return nil
}

func (pk *packer) entries(tr *tar.Reader, tw *tar.Writer, src io.Reader) error {
	skip := "" // an excluded directory whose entries follow
	for {
		if err := pk.ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return pk.failure(src, fmt.Errorf("read tar from the file manager: %w", err))
		}
		name, err := archive.CleanName(hdr.Name)
		if err != nil {
			return fmt.Errorf("tar from the file manager: %q: %w", hdr.Name, err)
		}
		if skip != "" && strings.HasPrefix(name, skip+"/") {
			continue
		}
		skip = ""
		isDir := hdr.Typeflag == tar.TypeDir
		if name != "" && (reservedTopName(name) || pk.m.Excluded(name, isDir)) {
			if isDir {
				skip = name
			}
			continue
		}
		out := &tar.Header{Name: name, Mode: hdr.Mode & 0o7777, ModTime: hdr.ModTime.Truncate(time.Second), Format: tar.FormatGNU}
		switch hdr.Typeflag {
		case tar.TypeDir:
			out.Typeflag = tar.TypeDir
			out.Name = name + "/"
			if name == "" {
				out.Name = "./"
			}
			if err := tw.WriteHeader(out); err != nil {
				return err
			}
		case tar.TypeReg, '\x00':
			if name == "" {
				return fmt.Errorf("tar from the file manager: a file names the root: %w", engine.ErrBadInput)
			}
			out.Typeflag, out.Size = tar.TypeReg, hdr.Size
			if err := tw.WriteHeader(out); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, tr, hdr.Size); err != nil {
				return fmt.Errorf("%q: %w", name, err)
			}
			pk.count(hdr.Size)
		case tar.TypeSymlink:
			out.Typeflag, out.Linkname = tar.TypeSymlink, hdr.Linkname
			if err := tw.WriteHeader(out); err != nil {
				return err
			}
		case tar.TypeLink:
			if err := pk.hardLink(tw, out, hdr.Linkname); err != nil {
				return err
			}
		default:
			// Devices, fifos and anything else are not archived, as archive.Write does.
		}
	}
	// Read to the end: tar pads its output, and only the end of the stream says how tar ended.
	if _, err := io.Copy(io.Discard, src); err != nil {
		// The pipe ends with tar's own error when it failed.
		return pk.failure(src, fmt.Errorf("read tar from the file manager: %w", err))
	}
	if err := pk.exec.wait(); err != nil {
		return err
	}
	return tw.Close()
}

// failure is the error of a Create whose tar stream could not be read: tar's own, when it
// failed (it says why better than the stream it left), else err. A little more of the stream
// is read first so that a tar on its way out is not blocked on a full pipe; the caller then
// closes the pipe and cancels the exec.
func (pk *packer) failure(src io.Reader, err error) error {
	_, _ = io.CopyN(io.Discard, src, 1<<20)
	select {
	case <-pk.exec.done:
		if pk.exec.err != nil {
			return pk.exec.err
		}
	default:
	}
	return err
}

func (pk *packer) count(n int64) {
	pk.done += n
	if pk.progress != nil && pk.done-pk.reported >= 4<<20 {
		pk.reported = pk.done
		pk.progress(engine.Progress{ProjectID: pk.p.ID, Op: pk.op, Phase: "archive", Done: pk.done})
	}
}

// hardLink stores the entry out, a hard link to target, as a regular file with target's
// contents, read by a second exec (the pod's tar sent them once, with the first name).
func (pk *packer) hardLink(tw *tar.Writer, out *tar.Header, target string) error {
	rel, err := archive.CleanName(target)
	if err != nil || rel == "" {
		return fmt.Errorf("tar from the file manager: %q: hard link to %q: bad target", out.Name, target)
	}
	ctx, cancel := context.WithCancel(pk.ctx)
	defer cancel()
	r, w := io.Pipe()
	x := pk.a.startExec(ctx, pk.ns, pk.pod, []string{"sh", "-c", hardLinkScript, "sh", MountPath, MountPath + "/" + rel}, nil, w,
		func(err error) { w.CloseWithError(err) })
	err = func() error {
		br := bufio.NewReader(r)
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("read %q: %w", rel, err)
		}
		size, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("read %q: bad size %q", rel, line)
		}
		out.Typeflag, out.Size = tar.TypeReg, size
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, br, size); err != nil {
			return fmt.Errorf("read %q: %w (changed while archived?)", rel, err)
		}
		if n, err := io.Copy(io.Discard, br); err != nil {
			return fmt.Errorf("read %q: %w", rel, err)
		} else if n > 0 {
			return fmt.Errorf("%q grew while it was archived", rel)
		}
		pk.count(size)
		return nil
	}()
	if err != nil {
		cancel()
		r.CloseWithError(err)
	}
	if xerr := x.wait(); xerr != nil && err == nil {
		err = fmt.Errorf("hard link %q to %q: %w", out.Name, rel, xerr)
	}
	return err
}

// Restore implements engine.Volumes. The project's storage and file manager are created when
// they are missing (a wake after hibernation deleted the namespace). The object is read and
// hashed here, decompressed, and checked entry by entry against the rules archive.Extract
// enforces (a hostile or corrupted archive is refused before anything reaches the pod); a
// clean tar made of the accepted entries goes to `tar -x` in the pod, into a fresh
// .sailtui-restore-<token> under the mount. Only once the whole object was read, tar
// succeeded and the SHA-256 matches is the tree swapped in (see swapScript); otherwise the
// extraction directory is removed and the mount is untouched.
func (a *ArchiveVolumes) Restore(ctx context.Context, p engine.Project, snap engine.Snapshot, progress engine.ProgressFunc) error {
	fail := func(err error) error {
		return fmt.Errorf("archive: restore snapshot %s into project %s: %w", snap.ID, p.ID, err)
	}
	key, err := a.sw.ArchiveKey(snap)
	if err != nil {
		return fail(err)
	}
	if snap.SHA256 == "" {
		return fail(fmt.Errorf("no recorded checksum to verify against: %w", engine.ErrBadInput))
	}
	if err := archive.CheckObjectSize(ctx, a.store, key, snap); err != nil {
		return fail(err)
	}
	rc, err := a.store.Get(ctx, key)
	if err != nil {
		return fail(fmt.Errorf("object %s: %w", key, err))
	}
	defer rc.Close()
	pod, err := a.ensurePod(ctx, p)
	if err != nil {
		return fail(err)
	}
	ns := a.rt.Namespace(p)
	tok := restoreToken(snap.ID)
	if err := a.script(ctx, ns, pod, "prepare", tok); err != nil {
		return fail(err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = a.script(context.WithoutCancel(ctx), ns, pod, "abort", tok)
		}
	}()

	var report func(done int64)
	if progress != nil {
		report = func(done int64) {
			progress(engine.Progress{ProjectID: p.ID, Op: engine.OpRestore, Phase: "extract", Done: done, Total: snap.SizeBytes})
		}
	}
	src := stream.NewHashReader(stream.WithContext(ctx, rc), sha256.New(), 4<<20, report)
	xctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inR, inW := io.Pipe()
	// Note: busybox tar creates symlinks with ".." or an absolute target only at the end of
	// the extraction, so the directories holding them get the time of the restore; GNU tar
	// restores every directory time.
	x := a.startExec(xctx, ns, pod, []string{"tar", "-x", "-p", "-f", "-", "-C", MountPath + "/" + restoreDirPrefix + tok}, inR, io.Discard,
		func(err error) {
			if err == nil {
				err = errors.New("tar ended before its input")
			}
			inR.CloseWithError(err)
		})
	ferr := filterArchive(ctx, src, inW, a.opts.Limits.ForSnapshot(snap))
	if ferr != nil {
		inW.CloseWithError(ferr)
		cancel()
	} else {
		inW.Close()
	}
	xerr := x.wait()
	// The filter's refusal explains the tar's failure that follows from it, not the reverse.
	if err := archive.VerifyObject(ctx, src, key, snap.SHA256, cmp.Or(ferr, xerr)); err != nil {
		return fail(err)
	}
	if err := a.script(ctx, ns, pod, "commit", tok); err != nil {
		return fail(err)
	}
	committed = true
	return nil
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
	pods := a.rt.core.CoreV1().Pods(ns)
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

// entryKind is what a name of the archive being restored became.
type entryKind uint8

const (
	kindDir entryKind = iota + 1
	kindFile
	kindSymlink
)

type dirEntry struct {
	name  string
	mode  int64
	mtime time.Time
}

// restoreFilter checks an archive's entries as archive.Extract would before any reaches the pod.
type restoreFilter struct {
	lim     archive.Limits
	seen    map[[16]byte]entryKind // by a hash of the clean name: bounded memory per entry
	dirs    []dirEntry
	entries int64
	claimed int64
}

func nameKey(name string) [16]byte {
	sum := sha256.Sum256([]byte(name))
	var k [16]byte
	copy(k[:], sum[:])
	return k
}

// filterArchive decompresses the zstd tar stream src and writes to dst a tar stream holding
// the same tree, or fails at the first entry archive.Extract would refuse: a name that is
// empty, absolute, holds NUL or "..", an entry below a symlink or a file of the archive, a
// name given twice (a directory may be named again as a directory), a hard link to anything
// but an earlier regular file of the archive, a device node, fifo or other special entry, a
// symlink with an empty or NUL target, and anything past the limits (entries, per-file and
// total size). Symlinks may point anywhere, as in archive.Sandwich's restores: nothing is
// written through them and the tree is swapped in only after the checksum matched.
//
// Directories are written owner-writable first, so that a read-only one can be filled by a
// tar running as a non-root user, and named again at the end, deepest first, with their own
// modes and times (the tars of the pod then apply both).
//
// dst gets the tar end marker only when the whole stream, its zstd checksums and its end
// included, was accepted.
func filterArchive(ctx context.Context, src io.Reader, dst io.Writer, lim archive.Limits) (err error) {
	if lim.MaxWindow <= 0 {
		lim.MaxWindow = archive.SnapshotMaxWindow
	}
	lim = lim.WithDefaults()
	dec, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(min(runtime.GOMAXPROCS(0), 4)), zstd.WithDecoderMaxWindow(uint64(lim.MaxWindow)))
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer func() {
		if errors.Is(err, zstd.ErrWindowSizeExceeded) {
			err = fmt.Errorf("extract: the archive needs a zstd window over the limit of %d MiB (sailtui's archives use 1 MiB): %w: %w",
				lim.MaxWindow>>20, engine.ErrBadInput, err)
		}
	}()
	// Closed before returning, so nothing reads src once the caller drains it.
	defer dec.Close()
	f := &restoreFilter{lim: lim, seen: map[[16]byte]entryKind{}}
	eof := stream.NewEOFReader(dec)
	tr := tar.NewReader(eof)
	tw := tar.NewWriter(dst)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("extract: %w", err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return fmt.Errorf("extract: read archive: %w", err)
		}
		if err := f.entry(hdr, tr, tw); err != nil {
			return fmt.Errorf("extract %q: %w", hdr.Name, err)
		}
	}
	if err := archive.CheckEnd(dec, eof); err != nil {
		return err
	}
	for i := len(f.dirs) - 1; i >= 0; i-- {
		d := f.dirs[i]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name + "/", Mode: d.mode, ModTime: d.mtime, Format: tar.FormatGNU}); err != nil {
			return err
		}
	}
	return tw.Close()
}

// parents checks every parent of name: none may be a symlink or a file of the archive;
// those not named yet become directories (tar makes them).
func (f *restoreFilter) parents(name string) error {
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		k := nameKey(name[:i])
		switch f.seen[k] {
		case kindSymlink:
			return fmt.Errorf("%q is a symlink; refusing to write through it: %w", name[:i], engine.ErrBadPath)
		case kindFile:
			return fmt.Errorf("%q exists and is not a directory: %w", name[:i], engine.ErrExists)
		case 0:
			f.seen[k] = kindDir
		}
	}
	return nil
}

// claim records name as kind, refusing any name already there (a directory may be named again
// as a directory).
func (f *restoreFilter) claim(name string, kind entryKind) error {
	if err := f.parents(name); err != nil {
		return err
	}
	k := nameKey(name)
	if cur, ok := f.seen[k]; ok && !(cur == kindDir && kind == kindDir) {
		return fmt.Errorf("already exists (duplicate entry): %w", engine.ErrExists)
	}
	f.seen[k] = kind
	return nil
}

func (f *restoreFilter) entry(hdr *tar.Header, tr io.Reader, tw *tar.Writer) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	f.entries++
	if f.entries > f.lim.MaxFiles {
		return fmt.Errorf("more than %d entries: %w", f.lim.MaxFiles, engine.ErrBadInput)
	}
	name, err := archive.CleanName(hdr.Name)
	if err != nil {
		return err
	}
	if name != "" && reservedTopName(name) {
		// sailtui's own restore directories are never part of a tree; such an entry (and
		// everything below it) is left out rather than let it pose as a leftover.
		if hdr.Typeflag == tar.TypeReg || hdr.Typeflag == '\x00' {
			if _, err := io.CopyN(io.Discard, tr, hdr.Size); err != nil {
				return fmt.Errorf("read archive: %w", err)
			}
		}
		return nil
	}
	mode := hdr.Mode & 0o777
	mtime := hdr.ModTime.Truncate(time.Second)
	out := &tar.Header{Name: name, Mode: mode, ModTime: mtime, Format: tar.FormatGNU}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if name == "" {
			return nil // the extraction directory itself
		}
		if err := f.claim(name, kindDir); err != nil {
			return err
		}
		f.dirs = append(f.dirs, dirEntry{name: name, mode: mode, mtime: mtime})
		out.Typeflag, out.Name, out.Mode = tar.TypeDir, name+"/", mode|0o700
		return tw.WriteHeader(out)
	case tar.TypeReg, '\x00':
		if err := f.lim.AdmitFile(name, hdr.Size, f.claimed); err != nil {
			return err
		}
		if err := f.claim(name, kindFile); err != nil {
			return err
		}
		f.claimed += hdr.Size
		out.Typeflag, out.Size = tar.TypeReg, hdr.Size
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, tr, hdr.Size); err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		return nil
	case tar.TypeSymlink:
		if name == "" {
			return fmt.Errorf("symlink names the target itself: %w", engine.ErrBadPath)
		}
		if hdr.Linkname == "" || strings.IndexByte(hdr.Linkname, 0) >= 0 {
			return fmt.Errorf("empty or NUL symlink target: %w", engine.ErrBadPath)
		}
		if err := f.claim(name, kindSymlink); err != nil {
			return err
		}
		out.Typeflag, out.Linkname = tar.TypeSymlink, hdr.Linkname
		return tw.WriteHeader(out)
	case tar.TypeLink:
		target, err := archive.CleanName(hdr.Linkname)
		if err != nil || target == "" || f.seen[nameKey(target)] != kindFile {
			return fmt.Errorf("hard link to %q: only links to an earlier file of the archive are allowed: %w", hdr.Linkname, engine.ErrBadPath)
		}
		if name == "" {
			return fmt.Errorf("hard link names the target itself: %w", engine.ErrBadPath)
		}
		if err := f.claim(name, kindFile); err != nil {
			return err
		}
		out.Typeflag, out.Linkname = tar.TypeLink, target
		return tw.WriteHeader(out)
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("device nodes are not allowed: %w", engine.ErrBadPath)
	case tar.TypeFifo:
		return fmt.Errorf("fifos are not allowed: %w", engine.ErrBadPath)
	default:
		return fmt.Errorf("unsupported entry type %q: %w", hdr.Typeflag, engine.ErrBadPath)
	}
}
