package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive/offheap"
	"github.com/sailtui/sailtui/engine/stream"
)

const (
	// completeTimeout bounds CompleteMultipartUpload, which runs detached from the caller's
	// context (see putMultipart). Servers that copy the parts together may take a while.
	completeTimeout = 5 * time.Minute
	// abortTimeout bounds the abort made on the spot when a Put fails; if it cannot reach the
	// server, abortLater keeps trying in the background for abortRetryWindow.
	abortTimeout     = 10 * time.Second
	abortRetryWindow = 10 * time.Minute
)

// Put implements engine.ObjectStore. An object that fits in one part is sent with a single
// PutObject; a larger one goes through a multipart upload fed part by part as r produces it,
// with at most Concurrency parts buffered or in flight: a Put holds at most PartSize ×
// Concurrency bytes, whatever the object's size. A read error, a
// failed part or a cancelled ctx aborts the upload, so a failed Put never leaves an object
// (S3 only makes one when the upload completes) and, as far as the server can be reached, no
// stored parts either.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (engine.ObjectInfo, error) {
	fail := func(err error) (engine.ObjectInfo, error) {
		return engine.ObjectInfo{}, fmt.Errorf("s3: put %q: %w", key, err)
	}
	full, err := s.fullKey(key)
	if err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	bufs := newPartBuffers(s.concurrency, s.partSize)
	defer bufs.free()
	buf, err := bufs.get(ctx)
	if err != nil {
		return fail(err)
	}
	n, eof, err := fill(stream.WithContext(ctx, r), buf.Bytes())
	switch {
	case err != nil:
		if ctx.Err() == nil {
			err = fmt.Errorf("read: %w", err)
		}
		return fail(err)
	case eof:
		if err := s.putSingle(ctx, full, buf.Bytes()[:n]); err != nil {
			return fail(err)
		}
		return engine.ObjectInfo{Key: key, Size: int64(n), ModTime: time.Now().UTC()}, nil
	}
	size, err := s.putMultipart(ctx, full, r, bufs, buf)
	if err != nil {
		return fail(err)
	}
	// ModTime is our clock, not the server's: asking would cost a HEAD, and failing the Put
	// over that HEAD would be worse than an approximate time.
	return engine.ObjectInfo{Key: key, Size: size, ModTime: time.Now().UTC()}, nil
}

// partBuffers hands out a Put's part buffers: at most n of them exist, allocated on first
// use (a small object needs one) and reused from part to part. They live outside the Go heap
// (see package offheap): they are most of a Put's memory and live as long as it, and on the
// heap the collector's headroom would double them. free gives them back when the Put is done.
type partBuffers struct {
	size int64
	idle chan *offheap.Buffer // n entries; nil for one not allocated yet
	all  []*offheap.Buffer    // every one allocated; only get's caller appends
}

func newPartBuffers(n int, size int64) *partBuffers {
	b := &partBuffers{size: size, idle: make(chan *offheap.Buffer, n)}
	for range n {
		b.idle <- nil
	}
	return b
}

// get waits for a free buffer: while all n are being uploaded, reading stops.
func (b *partBuffers) get(ctx context.Context) (*offheap.Buffer, error) {
	select {
	case buf := <-b.idle:
		if buf == nil {
			buf = offheap.New(int(b.size))
			b.all = append(b.all, buf)
		}
		return buf, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (b *partBuffers) put(buf *offheap.Buffer) { b.idle <- buf }

// free releases every buffer; only once nothing uses them any more: putMultipart waits for all
// its parts, and a part's body is shut (see partBody) before its buffer is put back.
func (b *partBuffers) free() {
	for _, buf := range b.all {
		buf.Free()
	}
	b.all = nil
}

// partBody is the body of an upload: a reader over a part buffer that can be shut, after which
// it never touches the buffer again, whatever still holds it. The HTTP transport may keep a
// request body past the end of the call (net/http documents that RoundTrip can close it from
// another goroutine later); the SDK shuts its own wrapper before returning, and this makes the
// guarantee ours rather than the SDK's, which matters because the buffer is reused and then
// unmapped. WriteTo keeps the transport writing straight from the buffer.
type partBody struct {
	mu sync.Mutex
	r  *bytes.Reader // nil once shut
}

var errBodyShut = errors.New("s3: part body read after its upload ended")

func newPartBody(b []byte) *partBody { return &partBody{r: bytes.NewReader(b)} }

func (p *partBody) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.r == nil {
		return 0, errBodyShut
	}
	return p.r.Read(b)
}

func (p *partBody) Seek(offset int64, whence int) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.r == nil {
		return 0, errBodyShut
	}
	return p.r.Seek(offset, whence)
}

func (p *partBody) WriteTo(w io.Writer) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.r == nil {
		return 0, errBodyShut
	}
	return p.r.WriteTo(w)
}

// shut waits for a read in progress and makes every later one fail.
func (p *partBody) shut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.r = nil
}

// putSingle stores a whole small object at once; S3 makes it appear atomically or not at all.
func (s *Store) putSingle(ctx context.Context, full string, data []byte) error {
	body := newPartBody(data)
	defer body.shut()
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &full,
		Body:          body,
		ContentLength: aws.Int64(int64(len(data))),
	}, s.payloadOptions...)
	return err
}

// putMultipart uploads first (a full part already read, from bufs) and the rest of r as a
// multipart upload and returns the object's size.
func (s *Store) putMultipart(ctx context.Context, full string, r io.Reader, bufs *partBuffers, first *offheap.Buffer) (int64, error) {
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            &s.bucket,
		Key:               &full,
		ChecksumAlgorithm: s.checksum,
	})
	if err != nil {
		return 0, fmt.Errorf("start multipart upload: %w", err)
	}
	uploadID := aws.ToString(created.UploadId)

	// uctx ends at the first failure, with it as the cause, so the reading loop and the
	// parts still in flight stop at once.
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		parts []types.CompletedPart
	)
	send := func(num int32, buf *offheap.Buffer, n int) {
		wg.Go(func() {
			body := newPartBody(buf.Bytes()[:n])
			defer bufs.put(buf)
			defer body.shut()
			out, err := s.client.UploadPart(uctx, &s3.UploadPartInput{
				Bucket:            &s.bucket,
				Key:               &full,
				UploadId:          &uploadID,
				PartNumber:        aws.Int32(num),
				Body:              body,
				ContentLength:     aws.Int64(int64(n)),
				ChecksumAlgorithm: s.checksum,
			}, s.payloadOptions...)
			if err != nil {
				cancel(fmt.Errorf("upload part %d: %w", num, err))
				return
			}
			mu.Lock()
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(num), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
			mu.Unlock()
		})
	}

	size := int64(len(first.Bytes()))
	num := int32(1)
	send(num, first, len(first.Bytes()))
	src := stream.WithContext(uctx, r)
	for {
		buf, err := bufs.get(uctx)
		if err != nil {
			break // uctx's cause says why
		}
		n, eof, err := fill(src, buf.Bytes())
		if err != nil {
			if uctx.Err() == nil {
				err = fmt.Errorf("read: %w", err)
			}
			cancel(err)
			break
		}
		if n == 0 {
			bufs.put(buf)
			break
		}
		if int(num) == s.maxParts {
			cancel(fmt.Errorf("object larger than %d parts of %d MiB, S3's limit on one upload: set S3_PART_SIZE higher (now %d MiB; an upload holds %d parts in memory): %w",
				s.maxParts, s.partSize>>20, s.partSize>>20, s.concurrency, engine.ErrBadInput))
			break
		}
		num++
		size += int64(n)
		send(num, buf, n)
		if eof {
			break
		}
	}
	// Wait for every part, failed or not: a part that lands after the abort would be stored
	// again under a dead upload.
	wg.Wait()
	if err := context.Cause(uctx); err != nil {
		return 0, s.abort(ctx, full, uploadID, err)
	}
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(aws.ToInt32(a.PartNumber) - aws.ToInt32(b.PartNumber)) })

	// Completing is the commit point and is not interrupted by ctx: a cancellation arriving
	// while the server assembles the object would leave unknown whether the object exists,
	// and a caller told "failed" must be able to rely on there being none.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), completeTimeout)
	defer ccancel()
	if _, err := s.client.CompleteMultipartUpload(cctx, &s3.CompleteMultipartUploadInput{
		Bucket:          &s.bucket,
		Key:             &full,
		UploadId:        &uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		return 0, s.abort(ctx, full, uploadID, fmt.Errorf("complete multipart upload of %d parts: %w", len(parts), err))
	}
	return size, nil
}

// abort discards a multipart upload after cause made the Put fail, and returns the Put's
// error. It runs detached from ctx, which is often the very reason for the abort. When the
// server cannot be reached the upload is handed to abortLater.
func (s *Store) abort(ctx context.Context, full, uploadID string, cause error) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	err := s.abortUpload(actx, full, uploadID, 2)
	if err == nil {
		return cause
	}
	s.abortLater(full, uploadID)
	return fmt.Errorf("%w (abort of upload %s failed, retrying in the background: %v)", cause, uploadID, err)
}

// abortUpload aborts one upload with at most attempts tries (0: the client's default); an
// upload that is already gone counts as aborted.
func (s *Store) abortUpload(ctx context.Context, full, uploadID string, attempts int) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &full, UploadId: &uploadID},
		func(o *s3.Options) {
			if attempts > 0 {
				o.RetryMaxAttempts = attempts
			}
		})
	var nsu *types.NoSuchUpload
	if err != nil && !errors.As(err, &nsu) {
		return err
	}
	return nil
}

// abortLater keeps trying to abort an upload whose server was unreachable when its Put failed,
// so that the stored parts go away once the server is back. A process that exits first leaves
// the upload to AbortIncomplete (or to a bucket lifecycle rule).
func (s *Store) abortLater(full, uploadID string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), abortRetryWindow)
		defer cancel()
		wait := 500 * time.Millisecond
		for {
			select {
			case <-ctx.Done():
				slog.Warn("s3: giving up aborting a failed multipart upload; AbortIncomplete or a lifecycle rule will remove it",
					"bucket", s.bucket, "key", full, "upload_id", uploadID)
				return
			case <-time.After(wait):
			}
			actx, acancel := context.WithTimeout(ctx, abortTimeout)
			err := s.abortUpload(actx, full, uploadID, 1)
			acancel()
			if err == nil {
				return
			}
			wait = min(2*wait, 10*time.Second)
		}
	}()
}

// AbortIncomplete aborts the multipart uploads under the store's prefix started more than
// olderThan ago, and returns how many it aborted. Uploads are left behind by a process that
// died mid-Put: their parts are invisible but billed. It is meant for the purge sweep, with an
// age well above the longest upload (a day), so that it never cuts a live one short.
func (s *Store) AbortIncomplete(ctx context.Context, olderThan time.Duration) (int, error) {
	prefix := s.objectKey("")
	cutoff := time.Now().Add(-olderThan)
	aborted := 0
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: &prefix}
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return aborted, fmt.Errorf("s3: list multipart uploads under %q: %w", prefix, err)
		}
		for _, u := range out.Uploads {
			if u.Initiated != nil && u.Initiated.After(cutoff) {
				continue
			}
			if err := s.abortUpload(ctx, aws.ToString(u.Key), aws.ToString(u.UploadId), 0); err != nil {
				return aborted, fmt.Errorf("s3: abort multipart upload %s of %q: %w", aws.ToString(u.UploadId), aws.ToString(u.Key), err)
			}
			aborted++
		}
		if !aws.ToBool(out.IsTruncated) || (aws.ToString(out.NextKeyMarker) == "" && aws.ToString(out.NextUploadIdMarker) == "") {
			return aborted, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// fill reads r into buf until buf is full or r ends. Only io.EOF itself is an end: an
// io.ErrUnexpectedEOF from r is a broken source, and must not pass for a complete object.
func fill(r io.Reader, buf []byte) (n int, eof bool, err error) {
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// LeftoverMinAge is the youngest multipart upload RemoveLeftovers aborts, whatever cutoff it
// is given: an upload's age is known only from when it was initiated, not from when its last
// part arrived, and a large project's upload from another host may run long past the op timeout.
const LeftoverMinAge = time.Hour

// RemoveLeftovers implements engine.LeftoverCleaner: the multipart uploads of Puts killed
// mid-way, initiated before cutoff and at least LeftoverMinAge ago.
// Their size is not known without listing every part, so Bytes stays 0.
func (s *Store) RemoveLeftovers(ctx context.Context, cutoff time.Time) (engine.Leftovers, error) {
	age := max(time.Since(cutoff), s.leftoverMinAge)
	n, err := s.AbortIncomplete(ctx, age)
	return engine.Leftovers{Count: n}, err
}
