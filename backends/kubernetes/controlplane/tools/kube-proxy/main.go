// Command kube-proxy is the upstream Service proxy, built from the module proxy so that the
// real node's ClusterIP Services route to their pods (issue 32); the node runs it in nftables
// mode, its rules in a table of its own. It mirrors k8s.io/kubernetes/cmd/kube-proxy/proxy.go.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric, as upstream
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
