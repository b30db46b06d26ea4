# sumjudge: every target builds/updates the project environment (.venv) first.
PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.sumjudge-installed
PROFILE ?= smoke
# Optional overrides of the profile for `make reproduce` (empty = the profile's value)
MODEL    ?=
BACKEND  ?=
BASE_URL ?=
N        ?=
SEED     ?=
NOTEBOOKS ?=

.PHONY: env test reproduce bench lab data clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

env: $(STAMP)

test: env
	$(BIN)/python -m pytest -q -rs

reproduce: env
	$(BIN)/python -m sumjudge.reproduce --profile $(PROFILE) --model "$(MODEL)" --backend "$(BACKEND)" \
		--base-url "$(BASE_URL)" --n "$(N)" --seed "$(SEED)" --notebooks "$(NOTEBOOKS)"

bench: env
	$(BIN)/sumjudge bench

lab: env
	$(BIN)/python -m pip install -q jupyterlab==4.6.6
	$(BIN)/jupyter lab notebooks

data: env
	$(BIN)/sumjudge data fetch all

clean:
	rm -rf build figures/*/ .pytest_cache
