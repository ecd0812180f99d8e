# sandboxd — build, images, run, test, bench.
#   make run    engine + binaries + images, then sandboxd with sandboxd.hcl
#   make test   the same set-up, then every test (end to end against Docker)

GO      ?= go
BIN     := bin
PLUGINS := $(BIN)/plugins
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/sandboxd/sandboxd/internal/service.Version=$(VERSION) -X main.version=$(VERSION)
LANGS   := python node typescript go java ruby php bash c cpp rust generic
POLICIES := limits patterns secrets commands example
IMAGES  := python node go java ruby php bash c rust lua

# Tools from npm the end-to-end tests use (an MCP client, an OpenAPI
# validator), pinned by their lockfile.
NPM_TOOLS := e2e/npm/node_modules/.package-lock.json

.PHONY: all build engine images npm-tools run test unit bench proto clean

all: build

build:
	@mkdir -p $(PLUGINS)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/sandboxd ./cmd/sandboxctl
	CGO_ENABLED=0 $(GO) build -ldflags '-s -w' -o $(BIN)/sandbox-init ./cmd/sandbox-init
	@for l in $(LANGS); do $(GO) build -ldflags '-s -w' -o $(PLUGINS)/sandbox-lang-$$l ./plugins/lang/$$l || exit 1; done
	@for p in $(POLICIES); do $(GO) build -ldflags '-s -w' -o $(PLUGINS)/sandbox-policy-$$p ./plugins/policy/$$p || exit 1; done

engine:
	@bash scripts/docker-engine.sh

images: engine
	@bash images/build.sh $(IMAGES)

npm-tools: $(NPM_TOOLS)

$(NPM_TOOLS): e2e/npm/package-lock.json
	cd e2e/npm && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

run: build images
	$(BIN)/sandboxd --config sandboxd.hcl

# Unit tests need nothing; the end-to-end tests need the engine and images,
# and fail (never skip) without them when CI=true.
test: build images npm-tools
	$(GO) test -count=1 -timeout 15m ./...

unit:
	$(GO) test -count=1 -short ./...

bench: build images
	$(GO) run ./bench -bin $(BIN)

proto:
	cd plugins/language/proto && protoc --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative language.proto

clean:
	rm -rf $(BIN)
