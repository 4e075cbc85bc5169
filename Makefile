# SPDX-License-Identifier: BSD-3-Clause
# hotpath: the two commands are `make demo` and `make check`; CMake + Ninja do the building.

PREFIX ?= /usr/local
FUZZ_SECONDS ?= 10
CMAKE ?= cmake
GEN := -G Ninja

.PHONY: all build demo check bench fuzz install clean deps-demo deps-check chrono

all: build

deps-demo:
	@scripts/deps.sh demo
deps-check:
	@scripts/deps.sh check

# Release build: build/hotpath, build/libhotpath.a, build/libhotpath.so.
build:
	@$(CMAKE) -S . -B build $(GEN) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@ninja -C build

demo: deps-demo build
	./build/hotpath demo

check: deps-check
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/check.sh

bench: build
	./build/hotpath bench all

# libFuzzer targets (clang), each run for FUZZ_SECONDS on a copy of its corpus.
fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/check.sh fuzz

install: build
	$(CMAKE) --install build --prefix $(PREFIX)

clean:
	rm -rf build build-* report
