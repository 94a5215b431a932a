# pyk8s: the two commands (make run, make test) and the developer ones (bench, lint).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
DATA   ?= ./data
# pytest workers: slow groups run in parallel where safe; one more than the 2 cores, as tests
# spend about a quarter of their time waiting (docs/testing.md)
WORKERS ?= 3

.PHONY: run test bench lint setup setup-test system system-test venv bytecode clean protos dashboard

setup: system venv

# make test's setup also installs what only tests use (headless Chromium for the dashboard's tests)
setup-test: system-test venv

system-test:
	@bash scripts/setup-system.sh --test

system:
	@bash scripts/setup-system.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@bash scripts/setup-venv.sh $(PYTHON) $(VENV)
	@touch $@

# pyk8s is installed editable: its modules' bytecode is written here, once, so that every process
# (server, agent, sim, each test's cluster) loads it instead of compiling its ~500 modules (~0.7 s at
# each start) where PYTHONDONTWRITEBYTECODE is set
bytecode: venv
	@$(BIN)/python -m compileall -q -j 0 src/pyk8s bench > /dev/null

run: setup bytecode
	@$(BIN)/pyk8s server --data-dir $(DATA)

test: setup-test bytecode
	@$(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup tests

bench: setup bytecode
	@$(BIN)/python -m bench

lint: venv
	@$(BIN)/ruff check src tests bench
	@$(BIN)/mypy src/pyk8s

# the gRPC modules of src/pyk8s/deviceplugin/api (committed, so installing needs no compiler)
PROTOS := $(wildcard src/pyk8s/deviceplugin/api/*.proto src/pyk8s/dra/api/*.proto)
protos: venv
	$(BIN)/python -m grpc_tools.protoc -I src --python_out=src --grpc_python_out=src --pyi_out=src $(PROTOS)

# the dashboard's front-end (web/) built into src/pyk8s/dashboard/static/, which is committed
dashboard:
	cd web && npm ci --no-audit --no-fund && npm run build

clean:
	rm -rf $(VENV) $(DATA) .pytest_cache
