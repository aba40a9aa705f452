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
GO        ?= go
FUZZTIME  ?= 20s
BENCHTIME ?= 1s
export GOFLAGS := -buildvcs=false

.PHONY: all build test unit e2e e2e-deps failpoints lint fmt vet fuzz bench bench-micro bench-compare demo clean

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

clean:
	rm -rf bin/
