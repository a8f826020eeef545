package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// maxResumes is how many times in a row a Get may reopen a broken stream without reading a
// byte in between; each reopening already retries with backoff inside the SDK.
const maxResumes = 3

// objectReader is the body of a Get. When the stream breaks before size bytes were read it
// reopens the object from the offset reached, pinned with If-Match to the ETag first read, so
// the bytes handed out are those of one version of the object.
type objectReader struct {
	ctx     context.Context
	s       *Store
	key     string
	full    string
	body    io.ReadCloser
	etag    string
	size    int64
	off     int64
	resumes int
	err     error
}

func (o *objectReader) Read(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	for {
		n, err := o.body.Read(p)
		o.off += int64(n)
		if n > 0 {
			o.resumes = 0
		}
		switch {
		case err == nil:
			return n, nil
		case err == io.EOF && o.off >= o.size:
			o.err = io.EOF
			return n, io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
		if cerr := o.ctx.Err(); cerr != nil {
			o.err = fmt.Errorf("s3: get %q: read: %w", o.key, cerr)
			return n, o.err
		}
		if rerr := o.resume(err); rerr != nil {
			o.err = rerr
			return n, o.err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// resume replaces the broken body with a new one starting at off, or says why it cannot.
func (o *objectReader) resume(cause error) error {
	fail := func(err error) error {
		return fmt.Errorf("s3: get %q: read at byte %d of %d: %w", o.key, o.off, o.size, err)
	}
	// Past the end there is nothing to reopen: the error is about the whole object (the
	// SDK's checksum check, for one).
	if o.resumes >= maxResumes || o.etag == "" || o.off >= o.size {
		return fail(cause)
	}
	o.resumes++
	_ = o.body.Close()
	o.body = http.NoBody
	out, err := o.s.client.GetObject(o.ctx, &s3.GetObjectInput{
		Bucket:  &o.s.bucket,
		Key:     &o.full,
		Range:   aws.String(fmt.Sprintf("bytes=%d-", o.off)),
		IfMatch: aws.String(o.etag),
	})
	if err != nil {
		var re *awshttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed {
			return fail(fmt.Errorf("object replaced while being read (%v)", cause))
		}
		return fail(fmt.Errorf("%w; reopening failed: %w", cause, mapNotFound(err)))
	}
	// A server that ignored the range would send the object from its start again.
	if want := fmt.Sprintf("bytes %d-", o.off); !strings.HasPrefix(aws.ToString(out.ContentRange), want) {
		_ = out.Body.Close()
		return fail(fmt.Errorf("%w; reopening at byte %d got range %q", cause, o.off, aws.ToString(out.ContentRange)))
	}
	o.body = out.Body
	return nil
}

func (o *objectReader) Close() error {
	if o.err == nil {
		o.err = fmt.Errorf("s3: get %q: read after close", o.key)
	}
	return o.body.Close()
}
