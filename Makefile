# capsule: `make run` builds everything and serves MCP on stdio;
# `make test-fast` is the developer's tier (lint, unit tests, the core
# end-to-end tests); `make test` runs every test, as CI does. See README.md.

# Workers apply their lockdown to every thread with AllThreadsSyscall,
# which Go refuses in a cgo binary; the seccomp allowlist also assumes a
# pure-Go process.
export CGO_ENABLED := 0

GO       ?= go
BIN      := bin/capsule
FUZZTIME ?= 30s
# The race detector needs cgo; the Python build installs clang, which
# serves as the C compiler when gcc is absent (looked up when used, after
# the assets are built, hence "=" rather than ":=").
RACE_CC   = $(shell command -v gcc || command -v clang || echo cc)

.PHONY: all build run lint test-fast test wazero wazero-check fuzz bench assets python-wasm javascript-wasm compiled-images compiled-images-release test-arm64 release-binaries dist image repro-check clean

all: build

# Reproducible (make repro-check): -trimpath keeps build paths out of the
# binary and Go's build id is a hash of the inputs. The commit is stamped
# with -X, not by Go's VCS stamping, which does not see git worktrees and
# which GOFLAGS can switch off: a stamp that depended on the environment
# would make two builds of one commit differ.
COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_UNIX := $(shell git log -1 --format=%ct 2>/dev/null)
# The prepared wazero tree counts too: a change there that is in no patch is
# a modified build.
MODIFIED    := $(if $(shell git status --porcelain --untracked-files=no 2>/dev/null; \
	git -C runtimes/wazero/prepared-by-make status --porcelain 2>/dev/null),true,false)
LDFLAGS     := -X main.commit=$(COMMIT) -X main.commitUnix=$(COMMIT_UNIX) -X main.modified=$(MODIFIED)

build: assets wazero
	$(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/capsule

run: build
	./$(BIN) serve

assets: python-wasm javascript-wasm compiled-images

# Both runtime builds run Go tools of this module (the module preparation),
# so wazero must be prepared first. Python: the interpreter and its
# standard library, then the bundled packages, whose bytecode must match the
# interpreter's.
python-wasm: wazero
	runtimes/placeholders.sh --remove python
	runtimes/python/build.sh
	runtimes/python/bundle.sh

javascript-wasm: wazero
	runtimes/placeholders.sh --remove javascript
	runtimes/javascript/fetch.sh

# The runtimes' modules compiled at build time, which linux/amd64 and
# linux/arm64 binaries embed so that a first start need not compile them
# (runtimes/compiled): this machine's architecture for bin/capsule; every
# release architecture for the release binaries and the tests that build
# them, another architecture's written under qemu-user (write.sh).
compiled-images: python-wasm javascript-wasm wazero
	GO=$(GO) runtimes/placeholders.sh --remove compiled
	GO=$(GO) runtimes/compiled/write.sh

compiled-images-release: python-wasm javascript-wasm wazero
	GO=$(GO) runtimes/placeholders.sh --remove compiled
	GO=$(GO) runtimes/compiled/write.sh $(RELEASE_ARCHS)

# staticcheck from the Go module proxy at a pinned version, run with
# `go run` so that it is no dependency of the product (go.mod stays as the
# product needs it). runtimes/wazero/prepared-by-make is upstream wazero
# plus our patches, a module of its own, so ./... leaves it out.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Both tiers start with it: vet, gofmt and staticcheck over our code. It
# needs no runtime built: make wazero's placeholders stand in for the
# embedded assets not built yet.
lint: wazero
	$(GO) vet ./...
	test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
	$(GO) run $(STATICCHECK) ./...

# The developer's tier: lint, then every package's tests in -short mode,
# which runs the unit tests and the end-to-end suite of cmd/capsule but
# leaves out the soak, the 1,000-call run and the release's tests (both
# architectures, npm, podman, qemu), and the race detector.
test-fast: assets lint
	$(GO) test -short -count=1 -timeout 20m ./...

# The full tier, which .ci/run runs: lint, the patches' own tests in the
# prepared wazero tree, race tests of supervisor and ipc, every test, and
# the soak on its own, then the arm64 guard-page tests under qemu-user.
test: assets compiled-images-release wazero wazero-check lint
	CGO_ENABLED=1 CC=$(RACE_CC) $(GO) test -race -count=1 ./supervisor/... ./ipc/...
	$(GO) test -count=1 -timeout 20m -skip '^TestSoakUnderCPUContention$$' ./...
	# The soak keeps every CPU busy on purpose: it runs alone, so that no
	# other test with a deadline runs starved beside it.
	$(GO) test -count=1 -timeout 10m -run '^TestSoakUnderCPUContention$$' ./cmd/capsule/
	GO=$(GO) cmd/capsule-release/arm64-tests.sh

# On an amd64 machine, the guard-page tests built for linux/arm64 and run
# under qemu-user: wazero's patch tests, the memory probe's differential fuzz
# corpus, the embedded arm64 images, and the out-of-bounds end-to-end test
# through an arm64 worker (cmd/capsule-release/arm64-tests.sh).
test-arm64: compiled-images-release wazero
	GO=$(GO) cmd/capsule-release/arm64-tests.sh

# wazero is the Go module proxy's release plus the patches in
# runtimes/wazero/patches, prepared in runtimes/wazero/prepared-by-make (where
# go.mod's replace points) and made again when a patch changes.
wazero:
	GO=$(GO) runtimes/wazero/prepare.sh
	GO=$(GO) runtimes/placeholders.sh

# The patches' own tests, in the prepared tree.
wazero-check: wazero
	GO=$(GO) runtimes/wazero/check.sh

# Every fuzz target, each for FUZZTIME. Inputs that fail are saved under
# the package's testdata/fuzz/ and stay as regression cases.
FUZZ_TARGETS := ipc:FuzzReader ipc:FuzzFileReceiver supervisor/mcp:FuzzParseArguments supervisor:FuzzCapture \
	supervisor:FuzzReturnedFiles supervisor:FuzzDone supervisor/mcp:FuzzFit worker:FuzzStream runtimes/javascript:FuzzMentionsAwait \
	runtimes/fileset:FuzzFromArgument runtimes/memprobe:FuzzGuardPages supervisor/importscan:FuzzModules \
	supervisor/mcp/toolcall:FuzzSplit supervisor/mcp/toolcall:FuzzDecode supervisor/mcp/toolcall:FuzzAppendString \
	runtimes/javascript:FuzzStringRuns supervisor/mcp/transport:FuzzOneMeaning \
	runtimes/fileset:FuzzCheckPath runtimes/fileset:FuzzClassify cmd/capsule/terminal:FuzzEscape

fuzz: assets wazero
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzzing $$name in ./$$pkg for $(FUZZTIME)"; \
		$(GO) test ./$$pkg/ -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME); \
	done

# The benchmark, whose report goes to stdout and to a dated file of its own
# in docs/bench (BENCH_OUT), then a longer soak than make test's: 2,000
# mixed calls under two busy loops per CPU, none of which may be lost.
SOAK_CALLS ?= 2000
BENCH_OUT  ?= docs/bench
bench: build
	$(GO) run ./cmd/capsule-bench -bin $(BIN) -out $(BENCH_OUT)
	CAPSULE_SOAK_CALLS=$(SOAK_CALLS) $(GO) test ./cmd/capsule/ -run '^TestSoakUnderCPUContention$$' -count=1 -v -timeout 30m

# The release binaries: one build of the tree per architecture, with the
# same flags as bin/capsule (the runtimes' wasm is the same for every
# architecture; only Go compiles for each).
RELEASE_ARCHS := amd64 arm64
RELEASE_BINS  := $(foreach a,$(RELEASE_ARCHS),bin/linux-$(a)/capsule)

release-binaries: assets compiled-images-release wazero
	@set -e; for a in $(RELEASE_ARCHS); do \
		echo "GOARCH=$$a $(GO) build -o bin/linux-$$a/capsule ./cmd/capsule"; \
		GOARCH=$$a $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o bin/linux-$$a/capsule ./cmd/capsule; \
	done

# The release (cmd/capsule-release): per architecture
# dist/capsule-VERSION-linux-ARCH.tar.gz (binary, LICENSE,
# THIRD_PARTY_NOTICES, SBOM.spdx.json, SHA256SUMS), the npm package
# dist/capsule-VERSION.tgz (the launcher) with one platform package per
# binary, dist/capsule-linux-x64-VERSION.tgz and
# dist/capsule-linux-arm64-VERSION.tgz, and dist/SHA256SUMS.
# `make image` writes the same and each architecture's container image,
# dist/capsule-VERSION-linux-ARCH.oci.tar, with no container daemon.
# Time stamps are the commit's; SOURCE_DATE_EPOCH overrides. Binaries built
# with uncommitted changes are refused; DIST_FLAGS=-allow-modified releases
# them anyway, for a try-out.
dist: release-binaries
	$(GO) run ./cmd/capsule-release $(addprefix -bin ,$(RELEASE_BINS)) -out dist $(DIST_FLAGS)

image: release-binaries
	$(GO) run ./cmd/capsule-release $(addprefix -bin ,$(RELEASE_BINS)) -out dist -image $(DIST_FLAGS)

# Two cold builds of HEAD (make image: every release artefact) in different
# directories with empty caches, compared. Not part of `make test`: it
# takes two cold builds.
repro-check:
	cmd/capsule-release/repro-check.sh

clean:
	rm -rf bin dist runtimes/python/dist runtimes/javascript/dist
