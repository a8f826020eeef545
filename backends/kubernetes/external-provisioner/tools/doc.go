// Package tools builds the real node's csi-provisioner (external-provisioner, issue 33) from
// the module proxy: upstream's own main package, named by go.mod's tool directive (go install
// cannot build it: its go.mod has replace directives, which only a main module may have). A
// module of its own so that its Kubernetes libraries never move the main module's.
package tools
