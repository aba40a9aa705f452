# boltinformer: every target is one command a newcomer can run.
GO        ?= go
PKGS      := ./...
FUZZTIME  ?= 20s
export GOFLAGS := -buildvcs=false

.PHONY: all build test unit lint fmt vet fuzz

all: build

build:
	$(GO) build $(PKGS)

## test: the whole suite (unit tests with -race, fuzz seed corpora).
test: lint unit

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '^hack/tools/')

vet:
	$(GO) vet $(PKGS)

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
