# collbench: `make bench` sets up this machine and runs the default benchmark; `make test` sets up and
# runs every test. System packages come from apt (only those missing), Node packages from npm ci.
SHELL := /bin/bash
# chromium: the HTML report test opens the page in headless Chromium (playwright-core drives Debian's build)
# slurm-wlm, munge: test/cli/slurm.test.ts starts a one-machine Slurm (slurmctld + slurmd, authenticated by munged)
# python3-prometheus-client: test/cli/soak.test.ts reads --prom files with the official Prometheus client's text parser
# valgrind: make bench-instructions counts instructions per op with callgrind (test/native/bench-overhead.test.ts runs it)
# clang-format: make format / make format-check for native/ (.clang-format)
APT_PACKAGES := openmpi-bin libopenmpi-dev libgloo-dev chromium redis-server python3-prometheus-client slurm-wlm munge valgrind \
  clang-format
# Tests: scripts/run-tests.sh runs the files in a parallel group (TEST_JOBS at a time) and a serial group (files
# that share machine-wide resources or race a clock), then one summary; `make test-unit` is the in-process part.
TEST_JOBS ?= 2
export TEST_JOBS
# The default benchmark: all_reduce, 8 B to 64 MiB, one rank per core, on the best backend built.
BENCH_ARGS ?= -b 8 -e 64M -f 2
NP ?= $(shell nproc)

.PHONY: all deps apt-deps node-deps build native ts links bench bench-overhead bench-instructions bench-gpu bench-gloo \
  bench-osu lint format format-check test test-unit stress clean nccl-cache bundle

all: build

deps: apt-deps node-deps

apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

node-deps: node_modules/.package-lock.json

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# COLLBENCH_NCCL_INCLUDE=DIR[:DIR…]: NCCL include directories to build -D's device-API kernels against (one variant
# per NCCL release; default the cached wheel's; native/CMakeLists.txt); given on a configured tree, it reconfigures it.
native: deps
	@if [ -n "$$COLLBENCH_NCCL_INCLUDE" ] && [ -f build/CMakeCache.txt ]; then \
	  cmake build -DCOLLBENCH_NCCL_INCLUDE="$$COLLBENCH_NCCL_INCLUDE" >/dev/null; fi
	npx cmake-js compile -d native -O build --log-level warn

ts: node-deps
	npx tsc -p tsconfig.json

# ./bin holds the nccl-tests names, so `export PATH=$$PWD/bin:$$PATH; all_reduce_perf …` works. The names come
# from the collective list just compiled (bench/core/types.ts PROGRAMS), so a new collective gets its link here.
links: ts
	@mkdir -p bin
	@programs=$$(node --input-type=module -e "console.log((await import('./dist/core/types.js')).PROGRAMS.join(' '))") && \
	  for p in collbench $$programs; do ln -sf ../dist/bin/collbench.js bin/$$p; done
	@chmod +x dist/bin/collbench.js

build: native ts links

bench: build
	bin/all_reduce_perf $(BENCH_ARGS) --np $(NP)

# Is the reported time the engine's own? collbench against plain loops of the same MPI/Gloo calls, interleaved
# (scripts/bench-overhead.ts; docs/performance.md). OVERHEAD_ARGS passes options, e.g. --backends mpi --ranks 1.
OVERHEAD_ARGS ?=
bench-overhead: build
	node --import tsx scripts/bench-overhead.ts $(OVERHEAD_ARGS)

# The same question counted instead of timed: instructions per op of the plain loops and of collbench's own loop and
# backend without Node, under valgrind's callgrind (scripts/bench-instructions.ts). INSTRUCTIONS_ARGS passes options.
INSTRUCTIONS_ARGS ?=
bench-instructions: build
	node --import tsx scripts/bench-instructions.ts $(INSTRUCTIONS_ARGS)

# collbench beside the libraries' own benchmarks, 2 ranks, interleaved (scripts/bench-peers.ts; docs/performance.md):
# Gloo's gloo/benchmark at the commit Debian's libgloo packages, the OSU Micro-Benchmarks 7.4 on Open MPI, each built
# first into the ignored third_party/ (scripts/bench-peers/build-*.sh; GLOO_SRC, OSU_SRC: a local source tree where
# GitHub or the OSU site is out of reach). BENCH_GLOO_ARGS / BENCH_OSU_ARGS pass options (--rounds, --sizes, --colls).
BENCH_GLOO_ARGS ?=
bench-gloo: build
	peer=$$(scripts/bench-peers/build-gloo-benchmark.sh) && \
	  node --import tsx scripts/bench-peers.ts --peer gloo --peer-bin "$$peer" $(BENCH_GLOO_ARGS)

BENCH_OSU_ARGS ?=
bench-osu: build
	peer=$$(scripts/bench-peers/build-osu.sh) && \
	  node --import tsx scripts/bench-peers.ts --peer osu --peer-bin "$$peer" $(BENCH_OSU_ARGS)

# collbench against NVIDIA's nccl-tests on this machine's GPU, same libnccl, interleaved per collective, mode and size
# (scripts/bench-gpu/run.sh; docs/performance.md): builds nccl-tests v2.19.6 in the ignored third_party/ first
# (NCCL_TESTS_SRC=DIR: a local source tree where GitHub is out of reach). BENCH_GPU_ARGS passes runner options.
BENCH_GPU_ARGS ?= --colls all --rounds 5
bench-gpu: build
	scripts/bench-gpu/run.sh $(BENCH_GPU_ARGS)

# One self-contained tarball (Node runtime, dist/, production dependencies, build/Release/*.node, launchers):
# collbench-<version>-linux-<arch>.tar.xz here, for nodes without Node.js (docs/bundle.md).
bundle: build
	bin/collbench bundle --force

# A cached NCCL wheel, when this machine has one, is unpacked into the ignored .cache/nccl/ so the NCCL
# ABI and error-path tests run against a real libnccl (they skip, saying so, without one).
nccl-cache:
	@scripts/nccl-cache.sh >/dev/null || true

# ESLint with typescript-eslint over bench/, test/ and scripts/ (eslint.config.js); fails on errors only. Then the
# type check of the tests and scripts too (the build compiles bench/ only; the tests run through tsx, unchecked).
lint: node-deps
	npx eslint bench test scripts
	npx tsc -p tsconfig.eslint.json

# One layout at the tree's 120 columns, by tools instead of by hand: prettier for the TypeScript (.prettierrc.json,
# .prettierignore), clang-format for the C++ (.clang-format). `make format` rewrites the files, `make format-check`
# fails on any file that differs; `make test` runs it with the lint, before the build.
FORMAT_TS := 'bench/**/*.ts' 'test/**/*.ts' 'scripts/**/*.ts' eslint.config.js
FORMAT_CPP = $(shell git ls-files 'native/*.cc' 'native/*.h' 'native/*.cu' 'native/*.c')
format: node-deps
	npx prettier --log-level warn --write $(FORMAT_TS)
	clang-format -i $(FORMAT_CPP)

format-check: deps
	npx prettier --log-level warn --check $(FORMAT_TS)
	clang-format --dry-run --Werror $(FORMAT_CPP)

# The in-process unit tests (test/unit): no native build, no mpirun; seconds.
test-unit: node-deps
	scripts/run-tests.sh unit

# lint and the format check first: they fail in seconds, before the build and the long tests.
test: lint format-check build nccl-cache
	scripts/run-tests.sh all

# The long forms of the fault tests (docs/reliability.md), not run by make test: 10 kill -9 trials per backend
# (MPI and Gloo, 3-4 ranks) and the counts above 2^31-1 elements (1 and 2 ranks, about 4.3 GB per rank, minutes).
stress: build
	COLLBENCH_DEATH_TRIALS=10 COLLBENCH_STRESS=1 node --import tsx --test --test-concurrency=1 \
	  test/cli/rank-death.test.ts test/cli/big-count.test.ts

clean:
	rm -rf build dist bin
