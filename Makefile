# The commands the README starts with: `make demo`, `make check` (the fast
# tier of the tests) and `make check-full` (every test; what CI runs).
# Everything else is meson + ninja in build/ (release) and build-asan/
# (AddressSanitizer + UndefinedBehaviorSanitizer, used by the tests).
# MESON_OPTS adds meson options to both, e.g. -During=disabled (no FUSE over
# io_uring) or -Dtests=disabled (no cmocka unit tests): meson_options.txt.

BUILD      ?= build
BUILD_ASAN ?= build-asan
MESON_OPTS ?= -Dwerror=true

.PHONY: all deps test-deps test-deps-full bench-deps build asan check check-full demo bench clean

all: build

deps:
	@scripts/install-deps.sh

# make check installs only what the fast tier runs; make check-full adds the
# servers (nginx, Ceph RGW) and the rest of the full tier's tools.
test-deps:
	@QUASH_DEPS_TEST=1 scripts/install-deps.sh

test-deps-full:
	@QUASH_DEPS_TEST=full scripts/install-deps.sh

bench-deps:
	@QUASH_DEPS_TEST=full QUASH_DEPS_BENCH=1 scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) $(MESON_OPTS) --buildtype=release -Db_ndebug=true

$(BUILD_ASAN)/build.ninja: | deps
	meson setup $(BUILD_ASAN) $(MESON_OPTS) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

asan: $(BUILD_ASAN)/build.ninja
	ninja -C $(BUILD_ASAN)

# tests/plan.txt gives each test its tier and the number of checks it reports.
check: test-deps build asan
	@tests/run.sh --tier fast

check-full: test-deps-full build asan
	@tests/run.sh

demo: test-deps build
	@scripts/demo.sh

bench: bench-deps build
	bench/run-all.sh

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)

# ---- installing ------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, its man pages, bash
# completion and mount(8)'s helper mount.fuse.quash, and libquash for other
# programs (libquash.so.0, libquash.a, include/quash/, quash.pc), through
# meson install.
# DROPIN=1 adds squashfuse_ll, squashfuse and mksquashfs links (they shadow
# the real tools later in PATH).  make deb builds dist/quash_VERSION_ARCH.deb
# from debian/ with dpkg-buildpackage (scripts/make-deb.sh), which offers
# those three as alternatives instead, and libquash0 and libquash-dev beside it.
PREFIX  ?= /usr/local
DESTDIR ?=
DROPIN  ?= 0

.PHONY: install uninstall deb

install: build
	meson configure $(BUILD) -Dprefix=$(PREFIX) -Ddropin_links=$(if $(filter 1,$(DROPIN)),true,false) >/dev/null
	meson install -C $(BUILD) --destdir "$(DESTDIR)" --quiet
	@scripts/install-record.sh "$(BUILD)"

uninstall:
	@scripts/uninstall.sh "$(BUILD)" "$(DESTDIR)"

deb: deps
	@QUASH_DEPS_DEB=1 scripts/install-deps.sh
	@scripts/make-deb.sh
