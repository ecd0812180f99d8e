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

# The MCP client the end-to-end tests drive `sandboxctl mcp` with, pinned
# by its lockfile.
MCP_CLIENT := e2e/mcpclient/node_modules/.bin/mcp-inspector

.PHONY: all build engine images mcp-client run test unit bench proto clean

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

mcp-client: $(MCP_CLIENT)

$(MCP_CLIENT): e2e/mcpclient/package-lock.json
	cd e2e/mcpclient && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

run: build images
	$(BIN)/sandboxd --config sandboxd.hcl

# Unit tests need nothing; the end-to-end tests need the engine and images,
# and fail (never skip) without them when CI=true.
test: build images mcp-client
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
