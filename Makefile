# The README's two commands: `make drill` (set up, then run the main job on a throwaway sandbox) and
# `make test` (set up, then the whole test suite). Both install what a fresh Debian machine lacks.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# tests/fleet.rs runs the Ansible collection (playbooks/ansible) with this ansible-core, in a virtual environment
# that `cargo clean` removes with the rest of target/. 2.19 is the newest line that runs on Debian 12's Python 3.11.
ANSIBLE_CORE := 2.19.14
ANSIBLE_VENV := target/ansible-venv

.PHONY: deps drill test
deps:
	@command -v cargo >/dev/null 2>&1 || { echo "innops needs Rust's cargo: install it with rustup (https://rustup.rs)"; exit 1; }
	@missing=""; \
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing="mariadb-server"; \
	command -v sysbench >/dev/null 2>&1 || missing="$$missing sysbench"; \
	python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing (throwaway servers come from mariadb-server; the benchmark tests compare with sysbench; a test renders report.html in headless chromium)"; \
		$(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	@if ! $(ANSIBLE_VENV)/bin/python -c 'import sys, ansible.release as r; sys.exit(r.__version__ != "$(ANSIBLE_CORE)")' >/dev/null 2>&1; then \
		echo "installing ansible-core $(ANSIBLE_CORE) into $(ANSIBLE_VENV) (the fleet tests run the Ansible collection)"; \
		rm -rf $(ANSIBLE_VENV) && python3 -m venv $(ANSIBLE_VENV) && \
		$(ANSIBLE_VENV)/bin/pip install -q --disable-pip-version-check "ansible-core==$(ANSIBLE_CORE)"; \
	fi

drill: deps
	cargo run --release --locked -- drill

test: deps
	cargo build --locked --all-targets
	@if cargo nextest --version >/dev/null 2>&1; then \
		cargo nextest run --locked --no-fail-fast; \
	else \
		cargo test --locked --no-fail-fast; \
	fi
