# Two commands set everything up: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
BENCH_STAMP := $(VENV)/.bench-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: run test bench lint format java browser

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

# the benchmarks also need the bench extra (tpchgen-cli); `make test` does not
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	@rm -f $(VENV)/.bench-* && touch $(BENCH_STAMP)

java:
	@command -v java >/dev/null 2>&1 || [ -x "$$JAVA_HOME/bin/java" ] || { \
	  echo "changeflow runs Spark, which needs Java 17 or newer, and none was found."; \
	  echo "Install it (Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless) or set JAVA_HOME."; \
	  exit 1; }

# Chromium for the status page's browser test: installed from Debian's packages when missing,
# only as root with apt-get (quietly; without it that test is skipped, never failed)
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && { apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq chromium >/dev/null 2>&1; }; } || true

# Pathway, the compute benchmark's peer, needs an older pyarrow: it gets an environment of its own
PEER := .venv-pathway
PEER_STAMP := $(PEER)/.installed-$(shell cksum benchmarks/pathway-requirements.txt | cut -d' ' -f1)
$(PEER_STAMP): benchmarks/pathway-requirements.txt
	@test -x $(PEER)/bin/python || $(PYTHON) -m venv $(PEER)
	$(PEER)/bin/python -m pip install --quiet --disable-pip-version-check -r $<
	@rm -f $(PEER)/.installed-* && touch $(PEER_STAMP)

run: $(STAMP) java
	$(BIN)/changeflow demo

test: $(STAMP) java browser
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/python -m pytest

bench: $(BENCH_STAMP) $(PEER_STAMP) java
	$(BIN)/python benchmarks/cdc_decode.py
	$(BIN)/python benchmarks/storage.py
	$(BIN)/python benchmarks/correction.py
	$(BIN)/python benchmarks/materialize.py
	$(BIN)/python benchmarks/compute.py
	$(BIN)/python benchmarks/cluster.py
	$(BIN)/python benchmarks/cluster_driver.py
	$(BIN)/python benchmarks/temporal.py
	$(BIN)/python benchmarks/columnar.py
	$(BIN)/python benchmarks/adhoc.py
	$(BIN)/python benchmarks/adapter.py
	$(BIN)/python benchmarks/serve.py

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

format: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks
