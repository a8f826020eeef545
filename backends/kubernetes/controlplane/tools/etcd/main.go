// Command etcd is the upstream etcd server, the kube-apiserver's storage in the Kubernetes
// tests (DESIGN.md, "Test tiers"). It mirrors go.etcd.io/etcd/server/v3's main.go.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
