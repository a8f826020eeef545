package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/capped"
)

func (r *Runtime) fileManagerPod(ctx context.Context, p engine.Project) (string, error) {
	return r.runningPod(ctx, r.Namespace(p), map[string]string{LabelProjectID: labelValue(p.ID), LabelComponent: ComponentFileManager}, "file manager")
}

// Exit codes of the scripts below, distinct from what the tools they run return.
const (
	exitEscapes = 86 // the path resolves outside the project
	exitMissing = 87 // the path does not exist
	exitIsDir   = 88 // a file operation on a directory
	exitNotDir  = 89 // a listing of a file
)

// fileScript does one file operation in the file-manager pod. $1 is the operation, $2 the
// path relative to the project (already cleaned by CleanRel, so no ".." and not absolute). The
// path is never part of the script text: it arrives as an argument. Symlinks are resolved in
// the pod and anything that resolves outside the mount is refused, the same confinement
// hostfs gives the other runtimes; the refusal comes before "not found", since what is outside
// the file manager's own filesystem may well exist in a dev pod's.
const fileScript = `root="$1"; shift; op="$1"; t="$root/$2"
inside() { r=$(readlink -f "$1" 2>/dev/null) || r=; case "$r" in "$root"|"$root"/*) return 0;; esac; echo "$2 leaves the project" >&2; exit 86; }
parent() { d=${t%/*}; while [ ! -e "$d" ] && [ "$d" != "$root" ]; do d=${d%/*}; done; inside "$d" "$2"; }
near() { d=$t; while [ ! -e "$d" ] && [ ! -L "$d" ] && [ "$d" != "$root" ]; do d=${d%/*}; done; inside "$d" "$1"; }
through() { if [ -L "$t" ]; then r=$(readlink -f "$t") || exit 1; inside "$r" "$1"; t=$r; fi; }
case "$op" in
read)
  near "$2"; [ -e "$t" ] || exit 87; inside "$t" "$2"; [ -d "$t" ] && exit 88; exec cat "$t" ;;
write)
  parent x "$2"; mkdir -p "${t%/*}" || exit 1; inside "${t%/*}" "$2"
  if [ -L "$t" ] || [ -e "$t" ]; then inside "$t" "$2"; [ -d "$t" ] && exit 88; fi
  through "$2"
  tmp="${t%/*}/$3"; cat > "$tmp" || { rm -f "$tmp"; exit 1; }
  n=$(wc -c < "$tmp") && s=$(sha256sum < "$tmp") || { rm -f "$tmp"; exit 1; }
  printf '%s %s\n' $n ${s%% *} ;;
commit)
  through "$2"
  tmp="${t%/*}/$3"; [ -f "$tmp" ] && [ ! -L "$tmp" ] || exit 87; inside "$tmp" "$2"
  [ "$(stat -c %s "$tmp")" = "$4" ] || { rm -f "$tmp"; echo "the received file changed before it was put in place" >&2; exit 1; }
  if [ -L "$t" ] || [ -e "$t" ]; then inside "$t" "$2"; [ -d "$t" ] && { rm -f "$tmp"; exit 88; }; fi
  mv -f "$tmp" "$t" || { rm -f "$tmp"; exit 1; } ;;
abort)
  through "$2"; rm -f "${t%/*}/$3" ;;
delete)
  parent x "$2"; { [ -e "$t" ] || [ -L "$t" ]; } || exit 87; exec rm -rf "$t" ;;
list)
  near "$2"; [ -e "$t" ] || exit 87; inside "$t" "$2"; [ -d "$t" ] || exit 89
  for f in "$t"/* "$t"/.[!.]* "$t"/..?*; do
    { [ -e "$f" ] || [ -L "$f" ]; } || continue
    m=$(stat -c '%s %Y %f' "$f") || continue
    l=; [ -L "$f" ] && l=$(readlink "$f")
    printf '%s\0%s\0%s\0' "${f##*/}" "$m" "$l"
  done ;;
*) echo "unknown operation $op" >&2; exit 2 ;;
esac`

// fileOp runs fileScript in the file-manager pod; more are the operation's further arguments.
func (r *Runtime) fileOp(ctx context.Context, p engine.Project, op, rel string, stdin io.Reader, stdout io.Writer, more ...string) error {
	clean, err := engine.CleanRel(rel)
	if err != nil {
		return err
	}
	pod, err := r.fileManagerPod(ctx, p)
	if err != nil {
		return err
	}
	var stderr capped.Buffer
	stderr.Max = 4096
	argv := append([]string{"sh", "-c", fileScript, "sh", r.cfg.MountPath, op, clean}, more...)
	code, err := r.exec.run(ctx, r.Namespace(p), pod, "file-manager", argv, stdin, stdout, &stderr)
	if err != nil {
		return err
	}
	msg := strings.TrimSpace(stderr.String())
	switch code {
	case 0:
		return nil
	case exitEscapes:
		return fmt.Errorf("%q: %s: %w", rel, msg, engine.ErrBadPath)
	case exitMissing:
		return fmt.Errorf("%q: %w", rel, engine.ErrNotFound)
	case exitIsDir:
		return fmt.Errorf("%q is a directory: %w", rel, engine.ErrBadInput)
	case exitNotDir:
		return fmt.Errorf("%q is not a directory: %w", rel, engine.ErrBadInput)
	}
	return fmt.Errorf("%s %q in the file manager: exit %d: %s", op, rel, code, msg)
}

// ReadFile implements engine.Runtime through the file-manager pod.
func (r *Runtime) ReadFile(ctx context.Context, p engine.Project, rel string, w io.Writer) error {
	return r.fileOp(ctx, p, "read", rel, nil, w)
}

// WriteFile implements engine.Runtime in two execs. The first streams the content into a
// temporary file beside the target and answers with the size and SHA-256 it received; only
// when they are what was sent does the second rename it over the target, so a reader never
// sees half a file and a write is never acknowledged short. Short is what an exec stream can
// be: containerd ends a process's stdin, with exit 0, once the process closes its stdout or
// stderr (an open upstream bug), and a stream cut by the network looks the same. A write
// through a symlink inside the project writes its target and keeps the link, as in the other
// runtimes.
func (r *Runtime) WriteFile(ctx context.Context, p engine.Project, rel string, rd io.Reader) error {
	if clean, err := engine.CleanRel(rel); err != nil {
		return err
	} else if clean == "." {
		return fmt.Errorf("write %q: the project root is a directory: %w", rel, engine.ErrBadInput)
	}
	tmp := ".sailtui-write." + strings.ToLower(rand.Text()[:16])
	sent := &hashingReader{r: rd, h: sha256.New()}
	var got bytes.Buffer
	if err := r.fileOp(ctx, p, "write", rel, sent, &got, tmp); err != nil {
		r.abortWrite(ctx, p, rel, tmp)
		return err
	}
	if sent.err != nil {
		r.abortWrite(ctx, p, rel, tmp)
		return fmt.Errorf("write %q: read the content: %w", rel, sent.err)
	}
	want := fmt.Sprintf("%d %x", sent.n, sent.h.Sum(nil))
	if strings.TrimSpace(got.String()) != want {
		r.abortWrite(ctx, p, rel, tmp)
		return fmt.Errorf("write %q: the file manager received %q (bytes, sha256), %q was sent: the exec stream was cut short; nothing was written, try again",
			rel, strings.TrimSpace(got.String()), want)
	}
	if err := r.fileOp(ctx, p, "commit", rel, nil, io.Discard, tmp, strconv.FormatInt(sent.n, 10)); err != nil {
		r.abortWrite(ctx, p, rel, tmp)
		return err
	}
	return nil
}

// abortWrite removes a write's temporary file, best effort: a leftover is a hidden file the
// next write to the directory does not reuse.
func (r *Runtime) abortWrite(ctx context.Context, p engine.Project, rel, tmp string) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = r.fileOp(actx, p, "abort", rel, nil, io.Discard, tmp)
}

// hashingReader counts and hashes what is read through it, and keeps the first error that
// is not the end of the stream: an exec that ends with a failed read must not look whole.
type hashingReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	err error
}

func (hr *hashingReader) Read(b []byte) (int, error) {
	n, err := hr.r.Read(b)
	hr.n += int64(n)
	hr.h.Write(b[:n])
	if err != nil && !errors.Is(err, io.EOF) && hr.err == nil {
		hr.err = err
	}
	return n, err
}

// DeleteFile implements engine.Runtime.
func (r *Runtime) DeleteFile(ctx context.Context, p engine.Project, rel string) error {
	if clean, err := engine.CleanRel(rel); err != nil {
		return err
	} else if clean == "." {
		return fmt.Errorf("delete %q: the project root cannot be deleted: %w", rel, engine.ErrBadPath)
	}
	return r.fileOp(ctx, p, "delete", rel, nil, io.Discard)
}

// ListFiles implements engine.Runtime.
func (r *Runtime) ListFiles(ctx context.Context, p engine.Project, rel string) ([]engine.FileInfo, error) {
	var out bytes.Buffer
	if err := r.fileOp(ctx, p, "list", rel, nil, &out); err != nil {
		return nil, err
	}
	clean, _ := engine.CleanRel(rel)
	return parseListing(clean, out.Bytes())
}

// parseListing reads fileScript's list output: name, "size mtime rawmode-hex", link target,
// each NUL-terminated.
func parseListing(dir string, b []byte) ([]engine.FileInfo, error) {
	fields := strings.Split(string(b), "\x00")
	if len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	if len(fields)%3 != 0 {
		return nil, fmt.Errorf("list %q: malformed listing from the file manager", dir)
	}
	var infos []engine.FileInfo
	for i := 0; i < len(fields); i += 3 {
		var size, mtime int64
		var raw uint64
		parts := strings.Fields(fields[i+1])
		if len(parts) != 3 {
			return nil, fmt.Errorf("list %q: malformed entry %q", dir, fields[i+1])
		}
		size, err1 := strconv.ParseInt(parts[0], 10, 64)
		mtime, err2 := strconv.ParseInt(parts[1], 10, 64)
		raw, err3 := strconv.ParseUint(parts[2], 16, 32)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("list %q: entry %q: %w", dir, fields[i], err)
		}
		mode := unixMode(uint32(raw))
		infos = append(infos, engine.FileInfo{
			Path: path.Join(dir, fields[i]), Size: size, Mode: mode.String(), IsDir: mode.IsDir(),
			ModTime: time.Unix(mtime, 0).UTC(), Target: fields[i+2],
		})
	}
	slices.SortFunc(infos, func(a, b engine.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return infos, nil
}

// unixMode turns st_mode bits into an fs.FileMode.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// execScript runs argv ($4...) in directory $1 with $2 variables ($3.. as K=V) exported, and
// marks the process with SAILTUI_EXEC so a timeout can find and kill all it started.
const execScript = `cd "$1" || exit 127; n="$2"; shift 2
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n-1)); done
exec "$@"`
