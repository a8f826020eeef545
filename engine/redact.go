package engine

import (
	"net/url"
	"strings"
)

// RedactURL removes the credential from a URL (https://user:token@host/x → https://***@host/x),
// so that it can be stored, logged and shown.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = url.User("***")
	return u.String()
}

// redactIn removes every trace of raw's credential from a message (tools echo URLs back).
func redactIn(msg, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, RedactURL(raw))
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "***")
	}
	return msg
}
