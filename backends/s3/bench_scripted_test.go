package s3store

import (
	"fmt"
	"time"

	"github.com/sailtui/sailtui/backends/s3/s3test"
)

// scripted are the pipelines a user would write to keep a project in S3 without sailtui, with
// the tools Debian ships (rclone, awscli), pointed at the benchmark's server and bucket: the
// baselines of the S3 goal (issue 19, item 4).
type scripted struct {
	env    string // shell exports: the server's credentials for both tools
	bucket string
	url    string
}

func newScripted(srv *s3test.Server) scripted {
	// rclone reads a remote "s3:" from RCLONE_CONFIG_S3_*; aws reads the usual variables.
	// Every value is hex, a URL or a region name: safe in single quotes. The server is plain
	// http: a CA bundle of the environment (AWS_CA_BUNDLE) is of no use, and rclone's SDK
	// refuses to start with one.
	env := fmt.Sprintf("unset AWS_CA_BUNDLE; export RCLONE_CONFIG_S3_TYPE=s3 RCLONE_CONFIG_S3_PROVIDER=Other RCLONE_CONFIG_S3_ENDPOINT='%s' "+
		"RCLONE_CONFIG_S3_ACCESS_KEY_ID='%s' RCLONE_CONFIG_S3_SECRET_ACCESS_KEY='%s' RCLONE_CONFIG_S3_REGION='%s' "+
		"AWS_ACCESS_KEY_ID='%s' AWS_SECRET_ACCESS_KEY='%s' AWS_DEFAULT_REGION='%s' AWS_PAGER= ;",
		srv.Endpoint, srv.AccessKey, srv.SecretKey, srv.Region, srv.AccessKey, srv.SecretKey, srv.Region)
	return scripted{env: env, bucket: srv.Bucket, url: srv.Endpoint}
}

func (s scripted) rcloneUpload(key string) string {
	return fmt.Sprintf("%s tar -cf - . | zstd -1 -T0 -q | rclone rcat 's3:%s/%s'", s.env, s.bucket, key)
}

func (s scripted) awsUpload(key string) string {
	return fmt.Sprintf("%s tar -cf - . | zstd -1 -T0 -q | aws --endpoint-url '%s' s3 cp --only-show-errors - 's3://%s/%s'", s.env, s.url, s.bucket, key)
}

func (s scripted) rcloneDownload(key, dir string) string {
	return fmt.Sprintf("%s rclone cat 's3:%s/%s' | zstd -d -q | tar -xf - -C '%s'", s.env, s.bucket, key, dir)
}

func (s scripted) awsDownload(key, dir string) string {
	return fmt.Sprintf("%s aws --endpoint-url '%s' s3 cp --only-show-errors 's3://%s/%s' - | zstd -d -q | tar -xf - -C '%s'", s.env, s.url, s.bucket, key, dir)
}

// faster names whichever of two sides took less time by f.
func faster(f func(string) time.Duration, a, b string) string {
	if f(b) < f(a) {
		return b
	}
	return a
}

// met says whether a goal is met, for the printed rows.
func met(ok bool) string {
	if ok {
		return "(goal met)"
	}
	return "(goal NOT met)"
}
