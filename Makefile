# The README's two commands: `make drill` (set up, then run the main job on a throwaway sandbox) and
# `make test` (set up, then the whole test suite). Both install what a fresh Debian machine lacks.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps drill test
deps:
	@command -v cargo >/dev/null 2>&1 || { echo "innops needs Rust's cargo: install it with rustup (https://rustup.rs)"; exit 1; }
	@missing=""; \
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing="mariadb-server"; \
	command -v sysbench >/dev/null 2>&1 || missing="$$missing sysbench"; \
	command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing (throwaway servers come from mariadb-server; the benchmark tests compare with sysbench; a test renders report.html in headless chromium)"; \
		$(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
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
