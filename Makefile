# boltinformer: every target is one command a newcomer can run.
#
#   make demo       the main job end to end on a local etcd + kube-apiserver
#   make test       the whole suite: lint, unit tests with -race, fuzz seed
#                   corpora, end-to-end tests against real etcd + apiserver
#   make e2e        only the end-to-end tests
#   make failpoints the crash tests that kill a process at each named commit,
#                   relist, migration and compaction step (-tags failpoints)
#   make bench      every scenario side by side with client-go: table, CSV, SVG chart in bench/out/
#   make fuzz       every fuzz target for FUZZTIME
#   make install    cachectl, "kubectl cache" and shell completions into PREFIX
GO        ?= go
FUZZTIME  ?= 20s
BENCHTIME ?= 1s
export GOFLAGS := -buildvcs=false

# Installation (GNU conventions): binaries in $(DESTDIR)$(BINDIR), shell
# completions under $(DESTDIR)$(DATADIR). /usr/local/bin is where kubectl's
# install guide puts kubectl; a user without root uses PREFIX=$$HOME/.local.
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
DATADIR   ?= $(PREFIX)/share
DESTDIR   ?=
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
# dist: release archives and the krew manifest for these platforms.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DISTDIR   ?= dist
RELEASE_URL ?= https://github.com/boltinformer/boltinformer/releases/download/$(VERSION)

.PHONY: all build test unit e2e e2e-deps failpoints lint fmt vet fuzz bench bench-micro bench-compare demo clean install uninstall dist

all: build

build:
	$(GO) build ./...

## test: everything CI runs (.ci/run calls exactly this).
test: e2e-deps lint failpoints
	$(GO) test -race -count=1 -timeout 25m ./...

## unit: the tests that need no etcd or apiserver binaries.
unit:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v /test/e2e)

## e2e: end-to-end tests against a real etcd and kube-apiserver (built into bin/).
e2e: e2e-deps
	$(GO) test -race -count=1 -timeout 20m ./test/e2e/...

## failpoints: a build with internal/failpoint compiled in, and the tests that
## kill a child process at each failpoint (test/failpoints); vet checks that build too.
failpoints:
	$(GO) vet -tags failpoints ./...
	$(GO) test -tags failpoints -race -count=1 -timeout 10m ./test/failpoints/...

## e2e-deps: build bin/etcd and bin/kube-apiserver when missing or outdated (~6 min the first time).
e2e-deps:
	@bash hack/e2e-deps.sh

fmt:
	gofmt -w $$(git ls-files -co --exclude-standard '*.go' | grep -v '^hack/tools/')

vet:
	$(GO) vet ./...

lint: vet
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go' | grep -v '^hack/tools/')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## fuzz: run every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## bench: every scenario of bench/ against client-go in one run (BENCH_N=10000,50000,150000 by default,
## the container scenario in memory cgroups at 50k when run as root; the real-apiserver scenarios use bin/);
## prints every row with its target and met/missed, writes bench/out/{table.md,results.csv,chart.svg}.
bench: e2e-deps
	@bash hack/bench-report.sh

## bench-micro: the go test benchmarks of bench/ (benchstat-comparable).
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./bench/...

## bench-compare REF=<commit>: benchstat of bench/ at REF against the work tree.
bench-compare:
	@test -n "$(REF)" || { echo "usage: make bench-compare REF=<commit>"; exit 2; }
	@bash hack/bench-compare.sh "$(REF)"

## demo: start etcd + kube-apiserver on loopback, run an agent, kill it, restart it warm.
demo: e2e-deps
	$(GO) run ./examples/demo

## install: cachectl on the PATH; kubectl-cache (the same binary) so that `kubectl cache get pods --db …`
## works; kubectl_complete-cache so that kubectl completes it; bash, zsh and fish completions.
install:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/site-functions $(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(DESTDIR)$(BINDIR)/cachectl ./cmd/cachectl
	ln -sf cachectl $(DESTDIR)$(BINDIR)/kubectl-cache
	install -m 0755 hack/kubectl_complete-cache $(DESTDIR)$(BINDIR)/kubectl_complete-cache
	$(DESTDIR)$(BINDIR)/cachectl completion bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/cachectl
	$(DESTDIR)$(BINDIR)/cachectl completion zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_cachectl
	$(DESTDIR)$(BINDIR)/cachectl completion fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/cachectl.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/cachectl $(DESTDIR)$(BINDIR)/kubectl-cache $(DESTDIR)$(BINDIR)/kubectl_complete-cache \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/cachectl $(DESTDIR)$(DATADIR)/zsh/site-functions/_cachectl \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/cachectl.fish

## dist: a kubectl-cache archive per platform of PLATFORMS and the krew manifest for them
## ($(DISTDIR)/cache.yaml, from plugins/cache.yaml), for a release at RELEASE_URL.
dist:
	@bash hack/dist.sh "$(VERSION)" "$(PLATFORMS)" "$(DISTDIR)" "$(RELEASE_URL)"

clean:
	rm -rf bin/ dist/
