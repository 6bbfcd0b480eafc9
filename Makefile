# lacuna: the two commands are `make quickstart` and `make test`.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin/lacuna

STATICCHECK_VERSION := v0.8.2
# Test tools live in .cache (gitignored): staticcheck, and a Python venv
# with DuckDB, pandas and pyarrow that reads every export in the tests, and
# rank_bm25, the reference runners/bm25 is checked against.
CACHE := $(CURDIR)/.cache
STATICCHECK := $(CACHE)/bin/staticcheck-$(STATICCHECK_VERSION)
VENV := $(CACHE)/venv
PY_REQS := cmd/lacuna/testdata/requirements.txt

.PHONY: build deps quickstart test vet fmt-check staticcheck test-python bench fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/lacuna

# NovelAPIBench stages 1-2 on four real Go modules (pipelines/quickstart.hcl,
# through the Go module proxy), twice: the second run is all cache hits.
# Then one knowledge bundle in full.
#
# With ENDPOINT=http://HOST:PORT/v1 (any OpenAI-compatible server of
# Qwen2.5-Coder-7B-Instruct; SERVED_NAME= when it reports another id), it
# also runs the model slice and prints its metrics table.
ENDPOINT ?=
SERVED_NAME ?=
QS_VARS := $(if $(ENDPOINT),--var endpoint=$(ENDPOINT)) $(if $(SERVED_NAME),--var served_name=$(SERVED_NAME))
# (a variable: a comma inside $(if ...) would end its argument)
SLICE_COLUMNS := model,cell,library,tasks,pass_at_1,api_acc,param_corr,ok,wrong_syntax,wrong_api_selection,wrong_import,wrong_param,wrong_shape_dtype,wrong_logic
quickstart: deps build
	$(BIN) validate $(QS_VARS) pipelines/quickstart.hcl
	$(BIN) run $(QS_VARS) pipelines/quickstart.hcl
	$(BIN) run $(QS_VARS) pipelines/quickstart.hcl
	$(BIN) cat pipelines/quickstart.hcl 'node.bundle.lib["zerolog"]' --format record --limit 1
	$(if $(ENDPOINT),$(BIN) cat $(QS_VARS) pipelines/quickstart.hcl 'node.metrics.slice["table"]' --where difficulty=all --columns $(SLICE_COLUMNS) --limit 100)

# bubblewrap isolates untrusted generated code (runners/sandbox). Installed
# here when missing and we are root; otherwise the sandbox warns and its
# isolation tests skip, saying why.
deps:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing bubblewrap"; apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "WARNING: bubblewrap is not installed (apt-get install bubblewrap): sandbox isolation tests will skip"; fi; }

# The export test (cmd/lacuna) reads every exported file with real DuckDB
# and pandas from this venv; CI=true makes it fail rather than skip
# without one.
test: deps vet fmt-check staticcheck test-python
	LACUNA_TEST_PYTHON=$(VENV)/bin/python $(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

# staticcheck at a pinned version, installed into .cache/bin when missing.
staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(CACHE)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(CACHE)/bin/staticcheck $@

# The venv is rebuilt when requirements.txt changes (a copy of the file
# installed last is kept inside it). python3-venv is installed with apt-get
# when creating it fails and we are root, as bubblewrap is.
test-python: $(VENV)/requirements.txt

$(VENV)/requirements.txt: $(PY_REQS)
	rm -rf $(VENV)
	@python3 -m venv $(VENV) 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing python3-venv"; apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && \
	    rm -rf $(VENV) && python3 -m venv $(VENV); \
	  else echo "python3 with venv is needed to test exports (apt-get install python3-venv)"; exit 1; fi; }
	$(VENV)/bin/pip install -q --disable-pip-version-check -r $(PY_REQS)
	cp $(PY_REQS) $@

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Engine benchmark against Snakemake (see bench/README.md).
bench: build
	bash bench/run.sh

fuzz:
	$(GO) test ./engine -run '^$$' -fuzz FuzzLoad -fuzztime 60s

clean:
	rm -rf bin pipelines/.lacuna pipelines/examples/.lacuna bench/out .cache
