# lacuna: the two commands are `make quickstart` and `make test`.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin/lacuna

.PHONY: build deps quickstart test vet fmt-check bench fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/lacuna

# Runs the ToolSense data pipeline on the released data in ../shared/data,
# twice: the second run is all cache hits.
quickstart: build
	$(BIN) validate pipelines/examples/toolsense_data.hcl
	$(BIN) run pipelines/examples/toolsense_data.hcl
	$(BIN) plan pipelines/examples/toolsense_data.hcl
	$(BIN) cat pipelines/examples/toolsense_data.hcl node.sample.dev --limit 5

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
	rm -rf bin pipelines/examples/.lacuna bench/out
