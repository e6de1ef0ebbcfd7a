# Makefile: a thin wrapper around CMake and ctest for the common tasks.
#   make build   configure and build into build/ (the `kiln` CLI is build/kiln)
#   make demo    install dependencies, build, run `kiln demo`
#   make test    install dependencies, build, run the default ctest suite
#   make clean   remove build/
# Dependencies are installed by scripts/setup-deps.sh (Debian 12, apt-get;
# a no-op when everything is installed).

BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# ctest labels left out of `make test` (long or special-purpose suites).
# The suite runs $(JOBS) tests at a time: most of its time is OpenCL program
# builds, one core each, and no test judges a time that a neighbour can spoil
# (their limits are loose, and verify does not judge noise-dominated rounds).
# The longest tests start first (COST in tests/CMakeLists.txt).
TEST_EXCLUDE ?= slow|fuzz|oclgrind|models|report

.PHONY: all build demo test clean setup-deps

all: build

setup-deps:
	sh scripts/setup-deps.sh

build:
	cmake -S . -B $(BUILD)
	cmake --build $(BUILD) -j $(JOBS)

# Steps run in order even under `make -j`.
demo:
	$(MAKE) setup-deps
	$(MAKE) build
	./$(BUILD)/kiln demo

test:
	$(MAKE) setup-deps
	$(MAKE) build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE '$(TEST_EXCLUDE)'

clean:
	rm -rf $(BUILD)
