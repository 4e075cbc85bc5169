# SPDX-License-Identifier: BSD-3-Clause
# hotpath: the two commands are `make demo` and `make check`; CMake + Ninja do the building.

PREFIX ?= /usr/local
FUZZ_SECONDS ?= 10
CMAKE ?= cmake
GEN := -G Ninja

.PHONY: all build demo check bench fuzz install clean deps-demo deps-check chrono profile apps-full

all: build

deps-demo:
	@scripts/deps.sh demo
deps-check:
	@scripts/deps.sh check

# Release build: build/hotpath, build/libhotpath.a, build/libhotpath.so.
# HP_LAYOUT=chrono builds the hot structures in their logical field order
# instead of by cache line, into build-chrono/ (docs/cachelines/hp_tcp_sock.md).
HP_LAYOUT ?= grouped
BUILD_DIR := $(if $(filter chrono,$(HP_LAYOUT)),build-chrono,build)
build:
	@$(CMAKE) -S . -B $(BUILD_DIR) $(GEN) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DHP_LAYOUT=$(HP_LAYOUT) >/dev/null
	@ninja -C $(BUILD_DIR)

# Both layouts side by side: build/ (grouped) and build-chrono/.
chrono:
	@$(MAKE) --no-print-directory build HP_LAYOUT=chrono

# Field profile build (clang, instrumented, slow) into build-profile/, for
# hotpath layout --profile: HP_FIELD_PROFILE=out.txt build-profile/hotpath rr
# --flows 1000 --duration 2, then build/hotpath layout --profile out.txt.
profile:
	@$(CMAKE) -S . -B build-profile $(GEN) -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DHP_FIELD_PROFILE=ON -DHP_BUILD_TESTS=OFF >/dev/null
	@ninja -C build-profile hotpath

demo: deps-demo build chrono
	./build/hotpath demo

check: deps-check
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/check.sh

bench: build
	./build/hotpath bench all

# Unmodified programs on hotpath at the issue's full sizes (root; make
# check runs the same suites with smaller ones): docs/apps.md.
apps-full: deps-check build
	@HP_APPS_FULL=1 bash -c 'rc=0; for t in tests/apps/*.sh; do echo "=== $$t"; $$t || rc=1; done; exit $$rc'

# libFuzzer targets (clang), each run for FUZZ_SECONDS on a copy of its corpus.
fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/check.sh fuzz

install: build
	$(CMAKE) --install build --prefix $(PREFIX)

clean:
	rm -rf build build-* report
