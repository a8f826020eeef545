# sailtui — every target a fresh machine needs is here: `make run` and `make test` install what
# they use (Debian packages through apt-get when missing, Go tools into .tools/).

SHELL        := /bin/bash
GO           ?= go
BIN          := bin/sailtui
TOOLS        := $(CURDIR)/.tools/bin
STATICCHECK  := $(TOOLS)/staticcheck
# The S3 server the object-store tests run against (posix backend on loopback).
VERSITYGW    := $(TOOLS)/versitygw
# k9s, the console the fleet benchmark compares against (issue 19), built from the module proxy.
K9S_VERSION  := v0.50.16
K9S          := $(TOOLS)/k9s
DEMO_STATE   ?= $(CURDIR)/.demo-state
VERSION      ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GOTEST       := $(GO) test -count=1
# Debian packages the tests and benchmarks call: tmux (console tests), git (template clones),
# zstd + tar (the archive benchmark's baseline), postgresql (server binaries for the store tests),
# busybox-static + docker-compose (the docker tests build a FROM-scratch image with a static sh),
# wget (the dev-server image's HTTP client; `make image` also fetches Debian's busybox package).
# containerd, runc and containernetworking-plugins run the real Kubernetes node's pods (a
# containerd of its own, never the system's); iptables and nftables: its FORWARD rule and
# kube-proxy's table, both removed when it stops. patch (GNU patch) applies the .patch files of
# the copies under ui/third_party for vendorcheck (make lint, make check-upstream). mmdebstrap
# makes the images of Debian's packages (make images: PostgreSQL, the example's app image).
APT_PACKAGES := tmux git zstd tar postgresql busybox-static wget docker-compose containerd runc containernetworking-plugins iptables nftables patch mmdebstrap

.PHONY: cluster cluster-down node-tool csi-tools k9s router router-down
.PHONY: image images
.PHONY: all build run test test-unit test-engine test-sqlite test-postgres test-s3 test-docker test-kubernetes test-local test-archive test-console test-e2e \
        bench lint check-upstream fmt deps tools clean

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/sailtui

## run: the console on the embedded default with a demo workspace (no Docker, cluster, DB or bucket).
run: build
	$(BIN) --demo --state-dir $(DEMO_STATE)

## image: the dev-server image docker mode runs (DEVSERVER_IMAGE, default tesslate-devserver:latest):
## FROM scratch, a static sailtui (devserver), Debian's busybox (sh and its tools), tmux and wget,
## built on the local Docker Engine from this tree, nothing pulled from a registry.
DEVSERVER_IMAGE ?= tesslate-devserver:latest
image: deps
	$(GO) run ./backends/docker/dockertest/mkimage --tag $(DEVSERVER_IMAGE)

## images: the images made of Debian's packages by mmdebstrap from this machine's apt sources
## (issue 34): sailtui-postgres:15 (starts as root, as the official image), sailtui-postgres-nonroot:15
## (runs as postgres from the start, as bitnami's) and sailtui-app:latest (python3, psycopg2,
## node, tmux: DEVSERVER_IMAGE of the three-tier example). Cached by a content key (the tag
## beside the name); a few minutes each the first time, seconds after.
images: deps
	$(GO) run ./backends/docker/dockertest/mkimage --debian

## deps: Debian packages the tests use, installed only when missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# The Kubernetes control plane the kubernetes backend's tests run against (DESIGN.md, "Test
# tiers"): etcd, kube-apiserver, kube-controller-manager, and for the node kube-scheduler, kubelet
# and kube-proxy, built from the Go module proxy by a
# tool module of their own, kept out of go.mod. About 8 min cold on 2 cores; only built when
# missing (after a version bump, make clean).
K8S_TOOLS    := backends/kubernetes/controlplane/tools
K8S_VERSION  := v1.34.3
K8S_BINS     := $(TOOLS)/etcd $(TOOLS)/kube-apiserver $(TOOLS)/kube-controller-manager \
                $(TOOLS)/kube-scheduler $(TOOLS)/kubelet $(TOOLS)/kube-proxy
# Stamp the release into the binaries, as Kubernetes' own build does: /version then says v1.34.3.
K8S_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
                -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34

# CoreDNS, the node's cluster DNS (issue 32), from a tool module of its own (it pins a newer
# client-go and the cloud SDKs of its plugins); the binary is named by its version, so a bump
# builds the new one beside the old. About 10 min cold on 2 cores under load (80 MB); not rebuilt
# while present.
COREDNS_TOOLS   := backends/kubernetes/coredns/tools
COREDNS_VERSION := v1.15.0
COREDNS         := $(TOOLS)/coredns-$(COREDNS_VERSION)

# Traefik, the router of docker mode (issue 34), from a tool module of its own: it needs
# replace and exclude lines (forks the proxy serves under other paths) that must stay out of
# go.mod, and `go install` refuses those. About 16 min cold on 2 cores under load (~180 MB); not
# rebuilt while present. make router runs it in a FROM scratch image.
TRAEFIK_TOOLS   := backends/docker/traefik/tools
TRAEFIK_VERSION := v3.6.12
TRAEFIK         := $(TOOLS)/traefik-$(TRAEFIK_VERSION)

# kube-network-policies, the node's NetworkPolicy enforcer (issue 32), from a tool module of its
# own (it pins client-go 0.32) around its controller package; named by its version like CoreDNS.
# About 7.5 min cold on 2 cores under load (53 MB); not rebuilt while present.
NETPOL_TOOLS    := backends/kubernetes/netpol/tools
NETPOL_VERSION  := v0.8.0
NETPOL          := $(TOOLS)/kube-network-policies-$(NETPOL_VERSION)

# The real CSI parts in front of the node's own driver (issue 33; the driver is
# backends/kubernetes/k8stest/csidriver): csi-provisioner, and the snapshot controller with its
# csi-snapshotter sidecar. Upstream's own main packages, each project built by a tool module of
# its own (go.mod tool directives: go install refuses their replace directives), stamped and
# named by version like CoreDNS; not rebuilt while present.
CSI_PROVISIONER_TOOLS   := backends/kubernetes/external-provisioner/tools
CSI_PROVISIONER_VERSION := v5.3.0
CSI_PROVISIONER         := $(TOOLS)/csi-provisioner-$(CSI_PROVISIONER_VERSION)
CSI_SNAPSHOTTER_TOOLS   := backends/kubernetes/external-snapshotter/tools
CSI_SNAPSHOTTER_VERSION := v8.4.0
CSI_SNAPSHOTTER         := $(TOOLS)/csi-snapshotter-$(CSI_SNAPSHOTTER_VERSION)
SNAPSHOT_CONTROLLER     := $(TOOLS)/snapshot-controller-$(CSI_SNAPSHOTTER_VERSION)

# k8snode runs the real Kubernetes node (kubelet + its own containerd, under the control plane
# above): `make test` wraps the test run in it, `make cluster` starts it for a person.
K8SNODE      := $(TOOLS)/k8snode
NODE_DIR     ?= /tmp/sailtui-node

tools: $(STATICCHECK) $(VERSITYGW) $(K8S_BINS) $(COREDNS) $(TRAEFIK) $(NETPOL) node-tool
## csi-tools: the real CSI sidecars; built only on demand until the node runs them (issue 33:
## the node's switch from its stand-ins to them is not in yet), so make test does not spend
## half an hour of a cold machine on binaries no test starts.
csi-tools: $(CSI_PROVISIONER) $(CSI_SNAPSHOTTER) $(SNAPSHOT_CONTROLLER)
## node-tool: always rebuilt (seconds): it is part of this module and changes with it.
node-tool:
	$(GO) build -o $(K8SNODE) ./backends/kubernetes/k8stest/k8snode
$(K8S_BINS):
	$(GO) -C $(K8S_TOOLS) build -ldflags "$(K8S_LDFLAGS)" -o $@ ./$(notdir $@)
$(COREDNS):
	$(GO) -C $(COREDNS_TOOLS) build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$(COREDNS_VERSION)" -o $@ .
$(TRAEFIK):
	$(GO) -C $(TRAEFIK_TOOLS) build -trimpath -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$(TRAEFIK_VERSION)" -o $@ github.com/traefik/traefik/v3/cmd/traefik
$(NETPOL):
	$(GO) -C $(NETPOL_TOOLS) build -trimpath -ldflags "-s -w" -o $@ .
$(CSI_PROVISIONER):
	$(GO) -C $(CSI_PROVISIONER_TOOLS) build -trimpath -ldflags "-s -w -X main.version=$(CSI_PROVISIONER_VERSION)" -o $@ github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner
$(CSI_SNAPSHOTTER) $(SNAPSHOT_CONTROLLER):
	$(GO) -C $(CSI_SNAPSHOTTER_TOOLS) build -trimpath -ldflags "-s -w -X main.version=$(CSI_SNAPSHOTTER_VERSION)" -o $@ \
	  github.com/kubernetes-csi/external-snapshotter/v8/cmd/$(patsubst %-$(CSI_SNAPSHOTTER_VERSION),%,$(notdir $@))
$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
$(VERSITYGW):
	GOBIN=$(TOOLS) $(GO) install github.com/versity/versitygw/cmd/versitygw@v1.8.0
## k9s: only for make bench; built when missing (after a version bump, make clean).
k9s: $(K9S)
$(K9S):
	GOBIN=$(TOOLS) $(GO) install github.com/derailed/k9s@$(K9S_VERSION)

## test: everything, against the real parts (see README "Tests"). cmd/sailtui is named first
## so that go test starts it first: it is the longest package by far, and the others fit in the
## time it takes. Its long tests on real parts mostly wait (containers, pods, HTTP), so up to
## TEST_PARALLEL of those marked parallel run at once rather than GOMAXPROCS (2 here).
TEST_PARALLEL ?= 4
test: deps
	@# The tools and the Debian images side by side: on a fresh machine most of the set-up is
	@# compiling the tools while apt fetches the images' packages.
	$(MAKE) --no-print-directory -j3 tools images
	$(MAKE) --no-print-directory lint
	$(GO) -C $(UV_PATCHED) test -count=1 .
	$(GO) -C $(TEA_PATCHED) test -count=1 .
	$(K8SNODE) run --dir $(NODE_DIR) -- $(GOTEST) -race -parallel $(TEST_PARALLEL) -timeout 50m ./cmd/sailtui/ ./...

# The patched renderer library and Bubble Tea (modules of their own, so ./... leaves them out):
# their tests check the patches against the published code; vendorcheck (make lint) that each
# is its release plus its .patch files, and lists the files each adds.
UV_PATCHED  := ui/third_party/ultraviolet
TEA_PATCHED := ui/third_party/bubbletea

## Quick loops, one per part. test-unit needs no real part beyond the filesystem (SQLite, the
## directory store): seconds. It includes the headless run and the metrics of cmd/sailtui, which
## are tested without the binary.
test-unit:
	$(GO) -C $(UV_PATCHED) test -count=1 .
	$(GO) -C $(TEA_PATCHED) test -count=1 .
	$(GOTEST) ./engine/... ./ui/... ./theme/... ./backends/sqlite/ ./backends/dirstore/ ./backends/internal/... ./cmd/sailtui/internal/...
test-engine:
	$(GOTEST) -race ./engine/...
test-sqlite:
	$(GOTEST) -race ./backends/sqlite/...
test-postgres: deps
	$(GOTEST) -race ./backends/postgres/...
test-kubernetes: deps tools
	$(K8SNODE) run --dir $(NODE_DIR) -- $(GOTEST) -race -timeout 30m ./backends/kubernetes/...

## cluster: the real node for trying the kubernetes mode by hand (idempotent); its last lines
## are the exports sailtui needs. cluster-down stops it and undoes every host change.
cluster: deps tools
	@$(K8SNODE) up --dir $(NODE_DIR)
cluster-down: node-tool
	$(K8SNODE) down --dir $(NODE_DIR)
## router: Traefik for docker mode, for a person (idempotent): a container named ROUTER_NAME
## of a FROM scratch image of $(TRAEFIK), on the docker provider (only containers labelled
## com.tesslate.routable=true), :80 published on 127.0.0.1:ROUTER_PORT (80: the URLs sailtui
## shows open as shown). Its last lines are the exports sailtui needs and the address to open.
## router-down removes it.
## WAKER=8099 adds the catch-all that sends every host nothing else serves to `sailtui waker
## --listen 0.0.0.0:8099` on this host (wake on request).
ROUTER_NAME ?= sailtui-router
ROUTER_PORT ?= 80
WAKER       ?=
router: $(TRAEFIK)
	@$(GO) run ./backends/docker/dockertest/mkrouter up --name $(ROUTER_NAME) --port $(ROUTER_PORT) --traefik $(TRAEFIK) $(if $(WAKER),--waker $(WAKER))
router-down:
	@$(GO) run ./backends/docker/dockertest/mkrouter down --name $(ROUTER_NAME)
test-docker: deps
	$(GOTEST) -race ./backends/docker/... ./engine/hostfs/...
test-s3: tools
	$(GOTEST) -race ./backends/s3/...
test-local:
	$(GOTEST) -race ./backends/local/...
test-archive:
	$(GOTEST) -race ./engine/archive/... ./backends/dirstore/...
test-console: deps
	$(GOTEST) -run 'Console' ./cmd/sailtui/
test-e2e: deps
	$(GOTEST) -race ./cmd/sailtui/...

## bench: speed and memory goals as ratios against baselines measured in the same run.
## bench also needs what the S3 baselines script with (Debian's rclone and awscli).
BENCH_APT_PACKAGES := rclone awscli
bench: tools k9s
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_PACKAGES) $(BENCH_APT_PACKAGES)"
	$(GO) test -run '^$$' -bench 'ArchiveVsTar' -benchtime 1x -timeout 30m ./engine/archive/
	$(GO) test -run '^$$' -bench 'LocalHibernate' -benchtime 1x -timeout 30m ./engine/
	$(GO) test -run '^$$' -bench 'SweepWallTime' -benchtime 1x -timeout 30m ./cmd/sailtui/
	$(GO) test -run '^$$' -bench 'SnapshotPause' -benchtime 1x -timeout 30m ./cmd/sailtui/
	$(GO) test -run '^$$' -bench 'Console' -benchtime 1x -timeout 10m ./ui/
	$(GO) test -run '^$$' -bench 'ConsoleFleet' -benchtime 1x -timeout 20m ./cmd/sailtui/
	$(GO) test -run '^$$' -bench 'ConsoleVsK9s' -benchtime 1x -timeout 20m ./cmd/sailtui/
	$(GO) test -run '^$$' -bench 'IdleSelection|Claims' -benchtime 3s -timeout 10m ./backends/postgres/
	$(GO) test -run '^$$' -bench 'S3Sandwich' -benchtime 1x -timeout 30m ./backends/s3/
	$(GO) test -run '^$$' -bench '^BenchmarkDocker$$' -benchtime 3x -timeout 30m ./cmd/sailtui/
	$(GO) test -run '^$$' -bench '^BenchmarkDockerNotes$$' -benchtime 5x -timeout 30m ./cmd/sailtui/
	$(K8SNODE) run --dir $(NODE_DIR) -- $(GO) test -run '^$$' -bench '^BenchmarkKubernetes(Node)?$$' -benchtime 5x -timeout 30m ./backends/kubernetes/

## lint also checks that each copy under ui/third_party is its release (the version go.mod
## requires, from the module proxy or cache) plus its .patch files (applied by GNU patch, which
## make deps installs) and nothing else.
## check-upstream says whether a newer release exists and whether the patches apply to it.
lint: tools
	@out=$$(gofmt -l $$(git ls-files '*.go' ; git ls-files --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run ./ui/third_party/vendorcheck
	$(GO) vet ./...
	$(STATICCHECK) ./...

check-upstream:
	$(GO) run ./ui/third_party/vendorcheck -upstream

fmt:
	gofmt -w $$(git ls-files '*.go'; git ls-files --others --exclude-standard '*.go')

clean:
	rm -rf bin .tools $(DEMO_STATE)
