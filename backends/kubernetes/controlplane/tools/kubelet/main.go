// Command kubelet is the upstream node agent, built from the module proxy so that the
// kubernetes runtime's tests run real pods on a real node (DESIGN.md, "Test tiers"). It mirrors
// k8s.io/kubernetes/cmd/kubelet/kubelet.go.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric, as upstream
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
