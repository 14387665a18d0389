# capsule: `make run` builds everything and serves MCP on stdio;
# `make test` runs every test. See README.md.

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

.PHONY: all build run test wazero-check fuzz bench assets python-wasm javascript-wasm dist repro-check clean

all: build

# Reproducible (make repro-check): -trimpath keeps build paths out of the
# binary and Go's build id is a hash of the inputs. The commit is stamped
# with -X, not by Go's VCS stamping, which does not see git worktrees and
# which GOFLAGS can switch off: a stamp that depended on the environment
# would make two builds of one commit differ.
COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_UNIX := $(shell git log -1 --format=%ct 2>/dev/null)
MODIFIED    := $(if $(shell git status --porcelain --untracked-files=no 2>/dev/null),true,false)
LDFLAGS     := -X main.commit=$(COMMIT) -X main.commitUnix=$(COMMIT_UNIX) -X main.modified=$(MODIFIED)

build: assets
	$(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/capsule

run: build
	./$(BIN) serve

assets: python-wasm javascript-wasm

python-wasm:
	runtimes/python/build.sh

javascript-wasm:
	runtimes/javascript/fetch.sh

test: assets wazero-check
	$(GO) vet ./...
	test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
	CGO_ENABLED=1 CC=$(RACE_CC) $(GO) test -race -count=1 ./supervisor/... ./ipc/...
	$(GO) test -count=1 -timeout 20m ./...

# runtimes/wazero/src must be wazero v1.12.0 plus the patches in
# runtimes/wazero/patches, whose own tests run here too.
wazero-check:
	GO=$(GO) runtimes/wazero/check.sh

# Every fuzz target, each for FUZZTIME. Inputs that fail are saved under
# the package's testdata/fuzz/ and stay as regression cases.
FUZZ_TARGETS := ipc:FuzzReader supervisor:FuzzParseArguments supervisor:FuzzCapture worker:FuzzStream \
	runtimes/javascript:FuzzMentionsAwait runtimes/memprobe:FuzzGuardPages

fuzz: assets
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzzing $$name in ./$$pkg for $(FUZZTIME)"; \
		$(GO) test ./$$pkg/ -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME); \
	done

bench: build
	$(GO) run ./cmd/capsule-bench -bin $(BIN)

# The release: dist/capsule-VERSION-linux-ARCH.tar.gz (binary, LICENSE,
# THIRD_PARTY_NOTICES, SBOM.spdx.json, SHA256SUMS) and dist/SHA256SUMS.
# Time stamps are the commit's; SOURCE_DATE_EPOCH overrides. A binary built
# with uncommitted changes is refused; DIST_FLAGS=-allow-modified releases
# it anyway, for a try-out.
dist: build
	$(GO) run ./cmd/capsule-release -bin $(BIN) -out dist $(DIST_FLAGS)

# Two cold builds of HEAD in different directories with empty caches,
# compared. Not part of `make test`: it takes two cold builds.
repro-check:
	cmd/capsule-release/repro-check.sh

clean:
	rm -rf bin dist runtimes/python/dist runtimes/javascript/dist
