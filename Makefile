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

.PHONY: all build run test wazero-check fuzz bench assets python-wasm javascript-wasm clean

all: build

build: assets
	$(GO) build -trimpath -o $(BIN) ./cmd/capsule

run: build
	./$(BIN) serve

assets: python-wasm javascript-wasm

# Each runtime's module is prepared for interpreter snapshots: its data
# segments move to a file of their own (runtimes/internal/snapshot).
PREPARE = $(GO) run ./runtimes/internal/snapshot/prepare

python-wasm:
	runtimes/python/build.sh
	$(PREPARE) -in runtimes/python/dist/python.wasm -out runtimes/python/dist/python.snap.wasm -data runtimes/python/dist/python.data

javascript-wasm:
	runtimes/javascript/fetch.sh
	$(PREPARE) -in runtimes/javascript/dist/quickjs.wasm -out runtimes/javascript/dist/quickjs.snap.wasm -data runtimes/javascript/dist/quickjs.data

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
	runtimes/javascript:FuzzMentionsAwait

fuzz: assets
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzzing $$name in ./$$pkg for $(FUZZTIME)"; \
		$(GO) test ./$$pkg/ -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME); \
	done

bench: build
	$(GO) run ./cmd/capsule-bench -bin $(BIN)

clean:
	rm -rf bin runtimes/python/dist runtimes/javascript/dist
