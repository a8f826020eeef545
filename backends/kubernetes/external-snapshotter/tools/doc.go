// Package tools builds the real node's snapshot controller and csi-snapshotter sidecar
// (issue 33) from the module proxy: upstream's own main packages, named by go.mod's tool
// directives (go install cannot build them: their go.mod has replace directives, for the
// client module and the Kubernetes libraries, that only a main module may have). A module of
// its own so that their Kubernetes libraries never move the main module's.
package tools
