package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/logfile"
)

// The kept log's segments in the bucket (see logs.go): how they are named, listed, written,
// read and trimmed.

// keptSegment is one saved piece of a container's log. Its key,
// <dir><at>-<last>-<random>.log.zst, says when it was saved (the order of segments) and the
// time of the last container line in it or before it (what a reader of the live pod skips).
type keptSegment struct {
	key      string
	at, last int64 // Unix nanoseconds
	size     int64
}

const segmentSuffix = ".log.zst"

// keepsLogs reports whether container logs outlive their pods (a bucket is configured).
func (r *Runtime) keepsLogs() bool { return r.cfg.Logs != nil }

// logProjectDir is the key prefix of all the project's segments; logDir of one container's.
func (r *Runtime) logProjectDir(p engine.Project) string {
	return r.cfg.LogPrefix + url.PathEscape(p.ID) + "/"
}

func (r *Runtime) logDir(p engine.Project, name string) string {
	return r.logProjectDir(p) + name + "/"
}

// segments lists a container's kept segments, oldest first. Objects under the prefix that are
// not segments (someone else's) are left out.
func (r *Runtime) segments(ctx context.Context, p engine.Project, name string) ([]keptSegment, error) {
	dir := r.logDir(p, name)
	objs, err := r.cfg.Logs.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("list kept log segments %s: %w", dir, err)
	}
	segs := make([]keptSegment, 0, len(objs))
	for _, o := range objs {
		name, ok := strings.CutPrefix(o.Key, dir)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		name, ok = strings.CutSuffix(name, segmentSuffix)
		parts := strings.Split(name, "-")
		if !ok || len(parts) != 3 {
			continue
		}
		at, err1 := strconv.ParseInt(parts[0], 10, 64)
		last, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		segs = append(segs, keptSegment{key: o.Key, at: at, last: last, size: o.Size})
	}
	slices.SortFunc(segs, func(a, b keptSegment) int { return strings.Compare(a.key, b.key) })
	return segs, nil
}

// lastKept is the time of the last container line kept in segs (0 when none).
func lastKept(segs []keptSegment) int64 {
	var last int64
	for _, s := range segs {
		last = max(last, s.last)
	}
	return last
}

// saveSegment keeps the stamped lines of logs written after the last kept line, then the marker
// what ("" for none), as a new segment, and drops the oldest segments past the cap.
func (r *Runtime) saveSegment(ctx context.Context, p engine.Project, name string, logs []byte, what string) error {
	segs, err := r.segments(ctx, p, name)
	if err != nil {
		return err
	}
	last := lastKept(segs)
	var out bytes.Buffer
	newLast := last
	for line := range bytes.Lines(logs) {
		if at, _, ok := engine.ParseLogLine(line); ok {
			if at.UnixNano() <= last {
				continue
			}
			newLast = max(newLast, at.UnixNano())
		}
		out.Write(line)
		if line[len(line)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	now := time.Now()
	if what != "" {
		out.Write(engine.FormatLogLine(now, []byte(engine.LogMarker(what))))
	}
	if out.Len() == 0 {
		return nil
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	packed := enc.EncodeAll(out.Bytes(), nil)
	_ = enc.Close()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	key := fmt.Sprintf("%s%020d-%020d-%s%s", r.logDir(p, name), now.UnixNano(), newLast, hex.EncodeToString(rnd[:]), segmentSuffix)
	if _, err := r.cfg.Logs.Put(ctx, key, bytes.NewReader(packed)); err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	total := int64(len(packed))
	for _, s := range segs {
		total += s.size
	}
	for _, s := range segs {
		if total <= r.logMax() {
			break
		}
		if err := r.cfg.Logs.Delete(ctx, s.key); err != nil {
			return fmt.Errorf("trim kept log of %s: %w", name, err)
		}
		total -= s.size
	}
	return nil
}

func (r *Runtime) logMax() int64 {
	if r.cfg.LogMaxBytes > 0 {
		return r.cfg.LogMaxBytes
	}
	return logfile.DefaultMax
}

// readSegment is a segment's stamped lines.
func (r *Runtime) readSegment(ctx context.Context, s keptSegment) ([]byte, error) {
	rc, err := r.cfg.Logs.Get(ctx, s.key)
	if err != nil {
		return nil, fmt.Errorf("read kept log segment %s: %w", s.key, err)
	}
	defer rc.Close()
	dec, err := zstd.NewReader(rc, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(8*r.logMax()+64<<20)))
	if err != nil {
		return nil, fmt.Errorf("read kept log segment %s: %w", s.key, err)
	}
	defer dec.Close()
	b, err := io.ReadAll(dec)
	if err != nil {
		return nil, fmt.Errorf("read kept log segment %s: %w", s.key, err)
	}
	return b, nil
}

// MarkLog implements engine.LogKeeper: a marker segment for each container that has a kept
// log (one that never ran gets none).
func (r *Runtime) MarkLog(ctx context.Context, p engine.Project, cs []engine.Container, what string) error {
	if !r.keepsLogs() {
		return nil
	}
	var errs []error
	for _, c := range cs {
		if err := engine.CheckContainerName(c.Name); err != nil {
			return fmt.Errorf("mark logs of %s: %w", p.Slug, err)
		}
		segs, err := r.segments(ctx, p, c.Name)
		if err == nil && len(segs) > 0 {
			err = r.saveSegment(ctx, p, c.Name, nil, what)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("mark logs of %s: %w", p.Slug, err)
	}
	return nil
}

// DropLogs implements engine.LogKeeper: every segment of the project goes.
func (r *Runtime) DropLogs(ctx context.Context, p engine.Project) error {
	if !r.keepsLogs() {
		return nil
	}
	objs, err := r.cfg.Logs.List(ctx, r.logProjectDir(p))
	if err != nil {
		return fmt.Errorf("drop logs of %s: %w", p.Slug, err)
	}
	for _, o := range objs {
		if err := r.cfg.Logs.Delete(ctx, o.Key); err != nil {
			return fmt.Errorf("drop logs of %s: %w", p.Slug, err)
		}
	}
	return nil
}

// keptTail is the last want lines of the segments (want < 0: all of them, want 0: none).
func (r *Runtime) keptTail(ctx context.Context, segs []keptSegment, want int) ([]byte, error) {
	if want == 0 {
		return nil, nil
	}
	var parts [][]byte
	lines := 0
	for i := len(segs) - 1; i >= 0 && (want < 0 || lines < want); i-- {
		b, err := r.readSegment(ctx, segs[i])
		if err != nil {
			return nil, err
		}
		parts = append(parts, b)
		lines += bytes.Count(b, []byte{'\n'})
	}
	slices.Reverse(parts)
	all := bytes.Join(parts, nil)
	if want > 0 && lines > want {
		off, _, err := logfile.TailOffset(bytes.NewReader(all), int64(len(all)), want)
		if err != nil {
			return nil, err
		}
		all = all[off:]
	}
	return all, nil
}
