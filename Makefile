# The README's two commands: `make drill` (set up, then run the main job on a throwaway sandbox) and
# `make test` (set up, then the whole test suite). Both install what a fresh Debian machine lacks.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# tests/fleet.rs runs the Ansible collection (playbooks/ansible) with this ansible-core, in a virtual environment
# that `cargo clean` removes with the rest of target/. 2.19 is the newest line that runs on Debian 12's Python 3.11.
ANSIBLE_CORE := 2.19.14
ANSIBLE_VENV := target/ansible-venv

# `make dist`: the portable binaries (glibc 2.17+, x86_64 and aarch64) and the .deb and .rpm that install each. Zig
# links against glibc 2.17's symbol versions, so the binary starts on CentOS 7, RHEL 8, Debian 11 and Ubuntu 20.04
# as well as on this machine. Every tool goes under target/, so `cargo clean` removes it: zig and cargo-zigbuild
# from PyPI in a virtual environment, cargo-deb and cargo-generate-rpm built from crates.io (rustup adds the
# aarch64 standard library to the toolchain, outside target/). x86_64's files are in target/dist/, aarch64's in
# target/dist/aarch64/; the man page, completions, playbooks and docs are the same for both.
DIST_TARGET := x86_64-unknown-linux-gnu
DIST_TARGET_ARM := aarch64-unknown-linux-gnu
DIST_GLIBC := 2.17
DIST_VENV := target/dist-venv
DIST_TOOLS := target/dist-tools
DIST := target/dist
DIST_ARM := $(DIST)/aarch64
ZIGLANG := 0.17.1
CARGO_ZIGBUILD := 0.24.1
CARGO_DEB := 3.8.0
CARGO_GENERATE_RPM := 0.21.1
DIST_BIN := target/$(DIST_TARGET)/portable/innops
DIST_BIN_ARM := target/$(DIST_TARGET_ARM)/portable/innops

.PHONY: deps drill test dist dist-deps dist-test
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
	@if command -v apt-get >/dev/null 2>&1 && ! apt-cache show mariadb-plugin-rocksdb >/dev/null 2>&1; then \
		echo "updating apt's package lists (a test fetches mariadb-plugin-rocksdb with apt-get download into /tmp, without installing it)"; \
		$(SUDO) apt-get update -q || true; \
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

dist-deps:
	@missing=""; \
	command -v readelf >/dev/null 2>&1 || missing="binutils"; \
	[ -x /usr/lib/rpm/find-requires ] || missing="$$missing rpm"; \
	python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing (readelf reads the binaries' GLIBC versions; rpm's find-requires lists the .rpm's libraries; zig comes in a venv)"; \
		$(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	@for target in $(DIST_TARGET) $(DIST_TARGET_ARM); do \
		rustup target list --installed 2>/dev/null | grep -qx $$target && continue; \
		command -v rustup >/dev/null 2>&1 || { echo "make dist needs Rust's standard library for $$target: install Rust with rustup (https://rustup.rs)"; exit 1; }; \
		echo "adding Rust's standard library for $$target to the toolchain (rustup target add)"; \
		rustup target add $$target || exit 1; \
	done
	@if ! $(DIST_VENV)/bin/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("ziglang") != "$(ZIGLANG)" or m.version("cargo-zigbuild") != "$(CARGO_ZIGBUILD)")' >/dev/null 2>&1; then \
		echo "installing zig $(ZIGLANG) and cargo-zigbuild $(CARGO_ZIGBUILD) into $(DIST_VENV) (they link the binary against glibc $(DIST_GLIBC))"; \
		rm -rf $(DIST_VENV) && python3 -m venv $(DIST_VENV) && \
		$(DIST_VENV)/bin/pip install -q --disable-pip-version-check "ziglang==$(ZIGLANG)" "cargo-zigbuild==$(CARGO_ZIGBUILD)"; \
	fi
	@for tool in cargo-deb@$(CARGO_DEB) cargo-generate-rpm@$(CARGO_GENERATE_RPM); do \
		name=$${tool%@*}; version=$${tool#*@}; \
		if ! grep -q "^\"$$name $$version " $(DIST_TOOLS)/.crates.toml 2>/dev/null; then \
			echo "building $$name $$version into $(DIST_TOOLS) (it makes the $$( [ $$name = cargo-deb ] && echo .deb || echo .rpm ))"; \
			cargo install -q --locked --root $(DIST_TOOLS) $$tool || exit 1; \
		fi; \
	done

# Both binaries in one cargo run (the two targets' crates compile side by side on two cores), then what the x86_64
# binary generates (man page, completions), the playbooks and the docs staged under target/dist/, then each
# architecture's packages from that one tree. The packages take the binary from cargo's output: Cargo.toml's assets
# name it target/release/innops, which cargo-deb and cargo-generate-rpm turn into target/TRIPLE/portable/innops
# for --target TRIPLE --profile portable (the file copied to target/dist/), and --target sets the package's
# architecture (amd64 and arm64 for the .deb, x86_64 and aarch64 for the .rpm).
dist: dist-deps
	PATH="$(abspath $(DIST_VENV))/bin:$$PATH" cargo zigbuild --locked --profile portable \
		--target $(DIST_TARGET).$(DIST_GLIBC) --target $(DIST_TARGET_ARM).$(DIST_GLIBC)
	rm -rf $(DIST) && mkdir -p $(DIST)/completions $(DIST)/doc/docs $(DIST_ARM)
	cp $(DIST_BIN) $(DIST)/innops
	cp $(DIST_BIN_ARM) $(DIST_ARM)/innops
	$(DIST)/innops man | gzip -9n > $(DIST)/innops.1.gz
	$(DIST)/innops completions bash > $(DIST)/completions/innops.bash
	$(DIST)/innops completions zsh > $(DIST)/completions/_innops
	$(DIST)/innops completions fish > $(DIST)/completions/innops.fish
	cp -R playbooks $(DIST)/playbooks && find $(DIST)/playbooks -name __pycache__ -prune -exec rm -rf {} +
	cp README.md $(DIST)/doc/ && cp docs/*.md $(DIST)/doc/docs/
	@# gzip, not the default zstd, and no rich dependencies in the .rpm: CentOS 7's rpm 4.11 reads neither.
	for target in $(DIST_TARGET):$(DIST) $(DIST_TARGET_ARM):$(DIST_ARM); do \
		triple=$${target%%:*}; out=$${target#*:}; \
		PATH="$(abspath $(DIST_TOOLS))/bin:$$PATH" cargo deb --no-build --no-strip --target $$triple --profile portable --output $$out/ && \
		PATH="$(abspath $(DIST_TOOLS))/bin:$$PATH" cargo generate-rpm --target $$triple --profile portable \
			--auto-req find-requires --payload-compress gzip --output $$out/ || exit 1; \
	done
	@for bin in $(DIST)/innops $(DIST_ARM)/innops; do \
		echo "portable binary: $$bin ($$(readelf -h $$bin | sed -n 's/^ *Machine: *//p')), $$(du -h $$bin | cut -f1), highest GLIBC symbol version: $$(readelf -V $$bin | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)"; \
	done
	@ls -1 $(DIST)/*.deb $(DIST)/*.rpm $(DIST_ARM)/*.deb $(DIST_ARM)/*.rpm

# The tests of make dist's output (tests/dist.rs, ignored by `make test`): each binary's GLIBC versions, --version
# and a dry run against a sandbox (aarch64's under qemu's user emulation), the .deb installed with dpkg (as root)
# and removed, the .rpm's file list and the .rpm installed into a throwaway root and erased. qemu-user comes without
# its recommended qemu-user-binfmt, which would register qemu with the kernel for every foreign binary on the
# machine: the tests run qemu-aarch64 themselves.
dist-test: deps dist
	@missing=""; \
	[ -f /usr/share/bash-completion/bash_completion ] || missing="bash-completion"; \
	command -v rpm >/dev/null 2>&1 || missing="$$missing rpm"; \
	command -v man >/dev/null 2>&1 || missing="$$missing man-db"; \
	command -v qemu-aarch64 >/dev/null 2>&1 || missing="$$missing qemu-user"; \
	[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || missing="$$missing libc6-arm64-cross"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing (the .deb's completion and man page are checked where they load; rpm reads and installs the .rpm; qemu runs the aarch64 binary with an aarch64 glibc)"; \
		$(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@if cargo nextest --version >/dev/null 2>&1; then \
		cargo nextest run --locked --test integration --run-ignored all -E 'test(/^dist::/)'; \
	else \
		cargo test --locked --test integration -- --include-ignored dist::; \
	fi
