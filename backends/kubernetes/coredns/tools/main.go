// Command coredns is upstream CoreDNS, built from the module proxy (every plugin of its
// plugin.cfg, as its own build) so that the real node's pods resolve Service names through the
// kubernetes plugin (issue 32). It mirrors github.com/coredns/coredns/coredns.go. A module of
// its own: CoreDNS pins client-go and the cloud SDKs its plugins use, which must not move the
// main module's nor the control plane's.
package main

import (
	_ "github.com/coredns/coredns/core/plugin" // every plugin, as upstream
	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
