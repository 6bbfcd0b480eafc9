# lacuna: the two commands are `make quickstart` and `make test`.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin/lacuna

.PHONY: build deps quickstart test vet fmt-check bench fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/lacuna

# NovelAPIBench stages 1-2 on four real Go modules (pipelines/quickstart.hcl,
# through the Go module proxy), twice: the second run is all cache hits.
# Then one knowledge bundle in full.
quickstart: deps build
	$(BIN) validate pipelines/quickstart.hcl
	$(BIN) run pipelines/quickstart.hcl
	$(BIN) run pipelines/quickstart.hcl
	$(BIN) cat pipelines/quickstart.hcl 'node.bundle.lib["zerolog"]' --format record --limit 1

# bubblewrap isolates untrusted generated code (runners/sandbox). Installed
# here when missing and we are root; otherwise the sandbox warns and its
# isolation tests skip, saying why.
deps:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing bubblewrap"; apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "WARNING: bubblewrap is not installed (apt-get install bubblewrap): sandbox isolation tests will skip"; fi; }

test: deps vet fmt-check
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Engine benchmark against Snakemake (see bench/README.md).
bench: build
	bash bench/run.sh

fuzz:
	$(GO) test ./engine -run '^$$' -fuzz FuzzLoad -fuzztime 60s

clean:
	rm -rf bin pipelines/.lacuna pipelines/examples/.lacuna bench/out
