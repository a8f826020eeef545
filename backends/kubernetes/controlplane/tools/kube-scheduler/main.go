// Command kube-scheduler is the upstream scheduler, built from the module proxy: the real node
// of the tests needs pods bound to it. It mirrors k8s.io/kubernetes/cmd/kube-scheduler/scheduler.go.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric, as upstream
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
