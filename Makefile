# sandboxd — build, images, run, test, bench.
#   make run    engine + binaries + python's image, then sandboxd with sandboxd.hcl (it builds the other images)
#   make test   the same set-up, then every test (end to end against Docker)

GO      ?= go
BIN     := bin
PLUGINS := $(BIN)/plugins
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/sandboxd/sandboxd/internal/daemon.Version=$(VERSION) -X main.version=$(VERSION)
LANGS   := python node typescript go java ruby php bash c cpp rust csharp r generic
POLICIES := example
IMAGES  := python node go java ruby php bash c rust lua csharp python311 go124 desktop

# Tools from npm the end-to-end tests use (an MCP client, an OpenAPI
# validator), pinned by their lockfile.
NPM_TOOLS := e2e/npm/node_modules/.package-lock.json

# make install: standard paths under PREFIX; DESTDIR for packaging.
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR    ?= /etc/systemd/system
LIBDIR     := $(PREFIX)/lib/sandboxd
SHAREDIR   := $(PREFIX)/share
# Members of this group may use the socket (mode 0660).
SOCKET_GROUP ?= sandboxd

# staticcheck, pinned, built from the Go module proxy into bin/tools.
STATICCHECK := $(BIN)/tools/staticcheck
STATICCHECK_VERSION := v0.8.2

# The dashboard's pages, bundled from npm packages pinned by the lockfile
# and embedded in sandboxd.
UI_WEB  := internal/dashboard/web
UI_DIST := internal/dashboard/dist/index.html

.PHONY: all build ui engine first-image images images-push cluster cluster-images cluster-down npm-tools test-tools lint run test unit fuzz soak bench proto install clean

all: build

build: ui
	@mkdir -p $(PLUGINS)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/sandboxd ./cmd/sandboxctl
	CGO_ENABLED=0 $(GO) build -ldflags '-s -w' -o $(BIN)/sandbox-init ./cmd/sandbox-init
	@for l in $(LANGS); do $(GO) build -ldflags '-s -w' -o $(PLUGINS)/sandbox-lang-$$l ./plugins/lang/$$l || exit 1; done
	@for p in $(POLICIES); do $(GO) build -ldflags '-s -w' -o $(PLUGINS)/sandbox-policy-$$p ./plugins/policy/$$p || exit 1; done

engine:
	@bash scripts/docker-engine.sh

images: engine
	@bash images/build.sh $(IMAGES)

# A Kubernetes on loopback (scripts/cluster.sh) for the Kubernetes
# runtime, NODES nodes (the tests use two), and its registry: images-push
# puts the languages' images there with the supervisor in it, as
# `sandboxctl images build` does for a daemon's languages on the cluster;
# the tests need only python.
REGISTRY ?= 127.0.0.1:5000
PUSH     ?= python node typescript go java ruby php bash c cpp rust
NODES    ?= 1
cluster: engine
	@NODES=$(NODES) bash scripts/cluster.sh up

cluster-down:
	@bash scripts/cluster.sh down

images-push: build images
	@bash images/push.sh $(REGISTRY) $(PUSH)

cluster-images: build images cluster
	@bash images/push.sh $(REGISTRY) python node
	@bash scripts/cluster.sh pull $(REGISTRY)/sandboxd/python:latest $(REGISTRY)/sandboxd/node:latest

npm-tools: $(NPM_TOOLS)

ui: $(UI_DIST)

$(UI_DIST): $(UI_WEB)/package-lock.json $(UI_WEB)/build.mjs $(wildcard $(UI_WEB)/src/*)
	cd $(UI_WEB) && npm ci --no-audit --no-fund --loglevel=error && node build.mjs

# What the tests drive besides Go: pytest (Debian's, for the system
# python3) for the Python client, tmux for interactive terminals, Debian's
# chromium for the dashboard, and the TypeScript client built with the
# compiler from npm.
TEST_DEBS := python3-pytest tmux chromium
test-tools: clients/typescript/dist/index.js
	@/usr/bin/python3 -c 'import pytest' 2>/dev/null && command -v tmux >/dev/null && command -v chromium >/dev/null || { export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq $(TEST_DEBS) >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq $(TEST_DEBS) >/dev/null; }; }

clients/typescript/dist/index.js: clients/typescript/package-lock.json $(wildcard clients/typescript/src/*.ts) clients/typescript/tsconfig.json
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run build

$(NPM_TOOLS): e2e/npm/package-lock.json
	cd e2e/npm && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# On a bare machine the binaries build while the engine is installed and
# the Debian base and python's image are made; sandboxd then builds the
# other images in the background (build_missing_images in sandboxd.hcl),
# each language serving as soon as its image lands.
# The Go build yields the cores to the first image's (niced): the image,
# which waits on the network and dpkg too, is the longer of the two.
run:
	@$(MAKE) --no-print-directory -j2 GO="nice -n 10 $(GO)" build first-image
	$(BIN)/sandboxd --config sandboxd.hcl

first-image: engine
	@bash images/build.sh python

# Unit tests need nothing; the end-to-end tests need the engine, images and
# the cluster (two nodes), and fail (never skip) without them when CI=true.
# The e2e package runs alone, after the others: beside their compiling and
# running (70 s by themselves) on this 2-core machine, its own run took
# 250 s longer. It takes 15 minutes by itself.
test: NODES = 2
test: build lint images cluster-images npm-tools test-tools
	$(GO) test -count=1 -timeout 15m $$($(GO) list ./... | grep -v '/e2e$$')
	$(GO) test -count=1 -timeout 45m ./e2e/

lint: $(STATICCHECK)
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt -w those files"; exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(abspath $(BIN)/tools) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

unit:
	$(GO) test -count=1 -short ./...

# Fuzz targets: the API's request decoding, the HCL config, the supervisor
# protocol (both ends) and archive extraction. `make test` runs their seed
# corpora; this runs each for FUZZTIME.
FUZZTIME ?= 60s
FUZZ_TARGETS := FuzzDecodeProgram:./internal/wire FuzzParse:./internal/config \
	FuzzConnFromSupervisor:./runtime/supervisor FuzzServe:./runtime/supervisor/sandboxinit FuzzExtract:./cmd/sandboxctl
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz: $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:} || exit 1; \
	done

# A mixed workload (runs, sessions, files, hostile programs, a plugin kill
# and an engine restart, on an engine of its own) for SOAK at 8 clients.
SOAK ?= 10m
soak: build images
	$(GO) run ./cmd/sandboxd-soak -duration $(SOAK) -clients 8

bench: build images npm-tools
	$(GO) run ./cmd/sandboxd-bench -bin $(BIN)

# The protocols' Go code: both plugin protocols (gRPC) and the E2B agent's
# services (Connect). protoc from Debian's protobuf-compiler (installed
# when missing); protoc-gen-go, protoc-gen-go-grpc and protoc-gen-connect-go
# pinned, from the Go module proxy into bin/tools.
PROTOS := plugins/language/proto/language.proto plugins/policy/proto/policy.proto
ENVD_PROTOS := internal/e2b/envd/process.proto internal/e2b/envd/filesystem.proto
PROTOC_GEN_GO_VERSION         := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION    := v1.6.0
PROTOC_GEN_CONNECT_GO_VERSION := v1.19.1
proto:
	command -v protoc >/dev/null || apt-get install -y -q protobuf-compiler
	GOBIN=$(abspath $(BIN)/tools) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(abspath $(BIN)/tools) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	GOBIN=$(abspath $(BIN)/tools) $(GO) install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(PROTOC_GEN_CONNECT_GO_VERSION)
	@for p in $(PROTOS); do \
		echo "protoc $$p"; \
		(cd $$(dirname $$p) && PATH=$(abspath $(BIN)/tools):$$PATH protoc --go_out=. --go_opt=paths=source_relative \
			--go-grpc_out=. --go-grpc_opt=paths=source_relative $$(basename $$p)) || exit 1; \
	done
	cd internal/e2b/envd && PATH=$(abspath $(BIN)/tools):$$PATH protoc -I. -I/usr/include --go_out=. --go_opt=paths=source_relative \
		--connect-go_out=. --connect-go_opt=paths=source_relative $(notdir $(ENVD_PROTOS))

# Binaries, plugins, Dockerfiles, the config (kept if present, with
# socket_group set), the systemd unit, shell completions and the group.
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/plugins $(DESTDIR)$(SHAREDIR)/sandboxd/images \
		$(DESTDIR)$(SYSCONFDIR)/sandboxd $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SHAREDIR)/bash-completion/completions \
		$(DESTDIR)$(SHAREDIR)/zsh/site-functions $(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d
	install -m 0755 $(BIN)/sandboxd $(BIN)/sandboxctl $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BIN)/sandbox-init $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(PLUGINS)/* $(DESTDIR)$(LIBDIR)/plugins/
	cp -r $(wildcard images/*/) $(DESTDIR)$(SHAREDIR)/sandboxd/images/
	test -e $(DESTDIR)$(SYSCONFDIR)/sandboxd/sandboxd.hcl || sed \
		-e 's|^plugin_dir *=.*|plugin_dir = "$(LIBDIR)/plugins"|' \
		-e 's|^supervisor *=.*|supervisor = "$(LIBDIR)/sandbox-init"|' \
		-e 's|^images_dir *=.*|images_dir = "$(SHAREDIR)/sandboxd/images"|' \
		-e 's|^# *socket_group *=.*|socket_group = "$(SOCKET_GROUP)"|' \
		sandboxd.hcl > $(DESTDIR)$(SYSCONFDIR)/sandboxd/sandboxd.hcl
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|/etc/sandboxd/|$(SYSCONFDIR)/sandboxd/|g' packaging/sandboxd.service > $(DESTDIR)$(UNITDIR)/sandboxd.service
	$(BIN)/sandboxctl completion bash > $(DESTDIR)$(SHAREDIR)/bash-completion/completions/sandboxctl
	$(BIN)/sandboxctl completion zsh > $(DESTDIR)$(SHAREDIR)/zsh/site-functions/_sandboxctl
	$(BIN)/sandboxctl completion fish > $(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d/sandboxctl.fish
	@if [ -z "$(DESTDIR)" ] && ! getent group $(SOCKET_GROUP) >/dev/null; then groupadd --system $(SOCKET_GROUP); fi
	@echo "installed. Start it: systemctl daemon-reload && systemctl enable --now sandboxd"
	@echo "Let a user use it: usermod -aG $(SOCKET_GROUP) USER (then log in again)"

clean:
	rm -rf $(BIN) $(UI_WEB)/node_modules && find internal/dashboard/dist -type f ! -name .keep -delete
