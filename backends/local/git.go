package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/capped"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// userinfoRE matches the user[:password]@ part of any URL in a text. The match runs to the
// last @ before the path, so a password with an unescaped @ is covered too.
var userinfoRE = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s?#]*@`)

// RedactURL replaces the credentials of every URL in s (https://user:token@host/...) with
// "***", so s can go into an error, a log or the store. The user name goes as well: with many
// hosts the token is the user name. scp-style git addresses (git@host:repo) carry no secret and
// are left as they are.
func RedactURL(s string) string {
	return userinfoRE.ReplaceAllString(s, "${1}***@")
}

// askpass answers git's credential prompts from the environment, so the credential reaches
// git neither through its argument list (visible to every user in ps) nor a file.
const askpass = `#!/bin/sh
case "$1" in
[Uu]sername*) printf '%s\n' "$SAILTUI_GIT_USERNAME" ;;
*) printf '%s\n' "$SAILTUI_GIT_PASSWORD" ;;
esac
`

// CloneInto runs `git clone --depth 1 [--branch B] -- URL` into dir of the project, which
// must be missing or empty (otherwise an error wrapping engine.ErrExists, so a retry can tell
// the clone is already there). The clone goes to a temporary directory beside dir and is moved
// into place once complete, so a failed clone leaves nothing half-written.
//
// A credential in the URL is removed from it and handed to git through GIT_ASKPASS and the
// environment; git's credential helpers are switched off so it is not stored either. Every
// error has credentials redacted.
func (r *Runtime) CloneInto(ctx context.Context, p engine.Project, dir, rawURL, branch string) error {
	if err := r.cloneInto(ctx, p, dir, rawURL, branch); err != nil {
		return fmt.Errorf("clone %s into %s:%s: %w", RedactURL(rawURL), p.Slug, dir, redactErr(err, rawURL))
	}
	return nil
}

// redactErr keeps the sentinel of err for errors.Is while rewriting its text.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactErr(err error, rawURL string) error {
	msg := RedactURL(err.Error())
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		// Whatever git did with them, the bare secrets never appear either.
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "***")
		} else if name := u.User.Username(); name != "" {
			msg = strings.ReplaceAll(msg, name, "***")
		}
	}
	var sentinel error
	for _, s := range []error{engine.ErrBadInput, engine.ErrBadPath, engine.ErrExists, engine.ErrNotFound, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			sentinel = s
			break
		}
	}
	return &redactedError{msg: msg, err: sentinel}
}

func (r *Runtime) cloneInto(ctx context.Context, p engine.Project, dir, rawURL, branch string) error {
	if rawURL == "" || strings.HasPrefix(rawURL, "-") || strings.ContainsAny(rawURL, "\x00\n") {
		return fmt.Errorf("not a repository URL: %w", engine.ErrBadInput)
	}
	if strings.HasPrefix(branch, "-") || strings.ContainsAny(branch, "\x00\n ") {
		return fmt.Errorf("branch %q is not a branch name: %w", branch, engine.ErrBadInput)
	}
	if !supported {
		return errUnsupportedOS()
	}
	gitURL, user, pass, err := splitCredentials(rawURL)
	if err != nil {
		return err
	}
	pdir, err := r.projectDir(p)
	if err != nil {
		return err
	}
	if _, err := os.Stat(pdir); err != nil {
		return fmt.Errorf("project directory: %w", engine.ErrNotFound)
	}
	rel, err := engine.CleanRel(dir)
	if err != nil {
		return err
	}
	res, err := hostfs.Resolve(pdir, rel, true)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(pdir)
	if err != nil {
		return err
	}
	defer root.Close()
	if ents, err := fs.ReadDir(root.FS(), res); err == nil {
		if len(ents) > 0 {
			return fmt.Errorf("%q is not empty: %w", rel, engine.ErrExists)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return hostfs.FileErr(rel, err)
	}
	parent := path.Dir(res)
	if err := root.MkdirAll(parent, 0o755); err != nil {
		return hostfs.FileErr(rel, err)
	}
	hostParent := filepath.Join(pdir, filepath.FromSlash(parent))
	tmp, err := os.MkdirTemp(hostParent, ".sailtui-clone-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	args := []string{
		// Off: a helper would store the credential on success, and one configured by the user
		// would be asked first.
		"-c", "credential.helper=",
		"clone", "--depth", "1", "--quiet",
	}
	if branch != "" {
		args = append(args, "--branch", branch)
	}
	args = append(args, "--", gitURL, filepath.Join(tmp, "repo"))
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(),
		"GIT_TERMINAL_PROMPT=0",
		"GCM_INTERACTIVE=never",
	)
	if user != "" || pass != "" {
		helper := filepath.Join(tmp, "askpass.sh")
		if err := os.WriteFile(helper, []byte(askpass), 0o700); err != nil {
			return err
		}
		cmd.Env = append(cmd.Env,
			"GIT_ASKPASS="+helper,
			"SAILTUI_GIT_USERNAME="+user,
			"SAILTUI_GIT_PASSWORD="+pass,
		)
	}
	out := &capped.Buffer{Max: 16 << 10}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run git: %w", unwrapPathError(err))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// git fetches through helper processes (git-remote-https); take them all.
		_ = killGroup(cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("git clone failed (%v): %s", err, strings.TrimSpace(out.String()))
	}
	// Into place: an empty target is replaced, a missing one created.
	cloned := path.Join(parent, filepath.Base(tmp), "repo")
	if res == "." {
		// The project root itself cannot be swapped for another directory: move the clone's
		// entries into it instead.
		ents, err := os.ReadDir(filepath.Join(tmp, "repo"))
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := root.Rename(path.Join(cloned, e.Name()), e.Name()); err != nil {
				return hostfs.FileErr(e.Name(), err)
			}
		}
		return nil
	}
	if err := root.Remove(res); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return hostfs.FileErr(rel, err)
	}
	if err := root.Rename(cloned, res); err != nil {
		return hostfs.FileErr(rel, err)
	}
	return nil
}

// splitCredentials takes the user and password out of an http(s) URL; git asks GIT_ASKPASS
// for them there. Other schemes keep theirs (ssh takes its user name from the URL only).
// Parse errors are worded here: net/url's errors quote the URL, credentials and all.
func splitCredentials(raw string) (clean, user, pass string, err error) {
	if !strings.Contains(raw, "://") {
		return raw, "", "", nil // scp-style or a local path: nothing to take out
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		return "", "", "", fmt.Errorf("repository URL cannot be parsed: %w", engine.ErrBadInput)
	}
	if u.User == nil || (u.Scheme != "http" && u.Scheme != "https") {
		return raw, "", "", nil
	}
	user = u.User.Username()
	pass, _ = u.User.Password()
	u.User = nil
	return u.String(), user, pass, nil
}
