//go:build tools

// Package tools pins Traefik v3.6.12, the router docker mode runs (issue 34), in a module of its
// own: Traefik needs replace and exclude lines (forks of three modules, a tencentcloud version
// the proxy does not serve), which `go install` refuses and which must not reach the main
// go.mod, and it pins a client-go and cloud SDKs of its own. The Makefile builds
// github.com/traefik/traefik/v3/cmd/traefik from here.
package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
