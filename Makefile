# snowfleet — see README.md. `make check` is the test command CI runs.
GO       ?= go
BIN      ?= bin
PKGS     := ./...
# GO_MIN: go.mod's go line, the oldest Go a program importing worker/client may
# build with (go mod tidy writes it with its patch number, a toolchain name).
GO_MIN   := $(shell sed -n 's/^go //p' go.mod)

.PHONY: all deps build test docs-check bench heal-bench bench-embedded lint sim bench-server bench-worker bench-client hostile scale fuzz images images-clean up down integration integration-mutants check clean diagram model rules screenshot k8s k8s-push

all: build

## deps: the Debian packages the tests need (only those missing), and dockerd
deps:
	deploy/install-deps.sh

## build: the two binaries, static, into ./bin
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/snowflaked ./cmd/snowflakectl

## test: unit and ZooKeeper tests, race detector on (starts its own ZooKeeper)
test:
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	$(GO) test -race -count=1 -tags chaos -run Chaos ./cmd/snowflaked/

## bench: the generator against bwmarrin/snowflake, side by side
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 1 ./snowflake/

## lint: formatting and vet, across every build tag in use, the portable path on
## macOS and Windows, worker/client with the oldest Go go.mod allows, and every
## mutant's patch still applies (integration/mutants)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags sim ./coordinator/
	$(GO) vet -tags chaos ./cmd/snowflaked/
	$(GO) vet -tags integration ./integration/
	integration/mutants/mutants.sh check
	GOOS=darwin $(GO) vet $(PKGS)
	GOOS=windows $(GO) build $(PKGS)
	@# The toolchain itself, fetched once through the module proxy: what an
	@# importer on Go $(GO_MIN) compiles. Without the proxy, outside CI, say so.
	@if GOTOOLCHAIN=go$(GO_MIN) $(GO) version >/dev/null 2>&1; then \
		echo "GOTOOLCHAIN=go$(GO_MIN) $(GO) vet ./worker/client/"; \
		GOTOOLCHAIN=go$(GO_MIN) $(GO) vet ./worker/client/; \
	elif [ "$$CI" = true ]; then \
		echo "lint: cannot fetch Go $(GO_MIN) through the module proxy"; exit 1; \
	else \
		echo "lint: NOT checked with Go $(GO_MIN) (cannot fetch it through the module proxy); go vet above applied its language and library rules only"; \
	fi

## sim: 1,024 claimers against one local ZooKeeper (a simulation, not a test)
sim:
	$(GO) test -tags sim -run TestSim -v -count=1 -timeout 10m ./coordinator/

## heal-bench: how long one worker stops serving after a pause past the session
## timeout and after a kill -9, in a full datacenter, with a standby, with a free
## slot (a by-hand fleet of 31-33 workers on a local ZooKeeper; about 4 min)
heal-bench:
	deploy/heal-bench.sh

## bench-embedded: Next through an embedded lease (coordinator/idlease, a real ZooKeeper) beside the bare generator and bwmarrin/snowflake
bench-embedded:
	$(GO) test -run '^$$' -bench Embedded -benchtime 2s -count 1 ./coordinator/idlease/

## bench-server: snowflaked against Redis INCR with redis-benchmark
bench-server:
	deploy/bench-server.sh

## bench-worker: Go benchmarks of the RESP server over loopback
bench-worker:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./worker/

## bench-client: the Go client's prefetch from live fleets of 2 and 4 workers, beside bwmarrin/snowflake in process (prints the staleness seen)
bench-client:
	$(GO) test -run '^$$' -bench Prefetch -benchtime 3s ./worker/client/

## hostile: 40 hostile connections against a worker for 30s (then the SETNAME
## floods alone for 10s) while clean
## clients draw IDs, and the fairness tests (4 NEXTIDS 4096 hogs; 64 and 256
## hogs of every kind against single NEXTIDs), with the 5 ms p99 goal asserted
## (make test runs them with a 250 ms bound, for a shared machine); one
## package at a time (-p 1): each measures what the other would disturb
hostile:
	SNOWFLEET_STRICT_LATENCY=1 SNOWFLEET_HOSTILE_DURATION=30s $(GO) test -p 1 -count=1 -v -run '^TestHostile$$|^TestHostileNames$$|^TestFairness$$|^TestFairnessMix$$' ./cmd/snowflaked/ ./worker/

## scale: N real workers (default flags) against one ZooKeeper: its requests per
## worker per second in steady state, what one worker's replacement costs in all
## and costs the holders, the time until all serve from a cold start; SCALE=16,64
## (in check), make scale SCALE=256 for the full figure (deploy/bench-history.md)
SCALE ?= 16,64
scale:
	SNOWFLEET_SCALE=$(SCALE) $(GO) test -count=1 -v -timeout 40m -run '^TestScale$$' ./cmd/snowflaked/

## fuzz: the RESP parser (seed corpus in worker/testdata/fuzz)
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./worker/

## images: the worker and ZooKeeper images, built offline
images:
	deploy/build-images.sh

## up: the fleet (3 ZooKeeper nodes, 3 workers), then the slot map and a few IDs
up:
	deploy/up.sh

## down: remove the fleet, its networks and volumes
down:
	deploy/down.sh

## images-clean: drop the images and the cached Debian rootfs (the next build is cold)
images-clean:
	deploy/build-images.sh clean

## integration: the docker-compose chaos suite
integration:
	$(GO) test -tags integration -count=1 -timeout 50m -v ./integration/

## integration-mutants: the mutation proof, nightly-sized (not in check): each
## deliberately broken worker (integration/mutants/<name>.patch, built from a
## scratch copy of the tree) must be caught by the suite's checks; the last
## result is in integration/README.md#mutation-proof
integration-mutants:
	SNOWFLEET_MUTANTS=1 $(GO) test -tags integration -count=1 -timeout 40m -v -run '^TestMutants$$' ./integration/

## check: what CI runs. Nothing skips unless asked (integration/testenv):
## SNOWFLEET_SKIP_ZK=1 skips the ZooKeeper tests, SNOWFLEET_SKIP_DOCKER=1 the
## Docker suite, SNOWFLEET_SKIP_CLIENTS=1 the tests of redis-cli, curl, redis-py,
## node-redis and HAProxy (none with CI=true)
check: deps lint model rules k8s docs-check test scale integration
	@skipped=; \
	if [ "$$SNOWFLEET_SKIP_ZK" = 1 ]; then skipped="the ZooKeeper tests (SNOWFLEET_SKIP_ZK=1)"; fi; \
	if [ "$$SNOWFLEET_SKIP_DOCKER" = 1 ]; then skipped="$${skipped:+$$skipped and }the Docker suite (SNOWFLEET_SKIP_DOCKER=1)"; fi; \
	if [ "$$SNOWFLEET_SKIP_CLIENTS" = 1 ]; then skipped="$${skipped:+$$skipped and }the client tool tests (SNOWFLEET_SKIP_CLIENTS=1)"; fi; \
	if [ -n "$$skipped" ]; then echo "check: ok, but SKIPPED by request: $$skipped"; else echo "check: ok, nothing skipped"; fi

clean:
	rm -rf $(BIN)

## docs-check: run deploy/README.md's by-hand block (a standalone ZooKeeper
## from Debian's jars, init, three workers) and the READMEs' transcripts
## against it; the output that does not vary must match; then the runbook's
## two disaster sections (ZooKeeper restored from a copy, then wiped) as
## written: every worker must serve again (about 3 min; needs Java, Debian's
## zookeeper, redis-cli and curl, not Docker; a missing one fails)
docs-check:
	deploy/docs-check.sh

## diagram: re-render the fleet picture in README.md (needs Graphviz: apt-get install -y graphviz)
diagram:
	dot -Tsvg deploy/diagram/fleet.dot -o deploy/diagram/fleet.svg

## model: model-check the lease protocol with Spin (coordinator/model/README.md):
## it must hold within the stated bounds and every mutant must fail
model:
	coordinator/model/run.sh quick

## rules: check the Prometheus alert rules and run their unit tests (promtool,
## from Debian's prometheus package: make deps)
rules:
	promtool check rules deploy/prometheus/rules.yml
	promtool test rules deploy/prometheus/rules_test.yml

## screenshot: refresh deploy/slots.png, the /slots page of a live 3-worker
## fleet rendered by headless Chromium (the test that checks its DOM)
screenshot:
	SNOWFLEET_SCREENSHOT=$(CURDIR)/deploy/slots.png $(GO) test -count=1 -run TestSlotsPage ./cmd/snowflaked/

## k8s: check the Kubernetes manifests in deploy/k8s (strict decoding into
## k8s.io/api, flags, probes, ports, grace period against the binary); a
## module of its own, so the Kubernetes libraries stay out of go.mod
k8s:
	cd deploy/k8s && $(GO) vet ./... && $(GO) test -count=1 ./...

## k8s-push: build the worker and ZooKeeper images (as make images does), push
## them to REGISTRY (a host and path: make k8s-push
## REGISTRY=registry.example.com/team; ZK_IMAGE_REF=<official image@sha256:...>
## pins the official ZooKeeper image instead of ours) and pin their digests in
## deploy/k8s/kustomization.yaml's images: (deploy/k8s/push.sh)
k8s-push:
	@test -n "$(REGISTRY)" || { echo "make k8s-push REGISTRY=registry.example.com/team (a registry you can push to)"; exit 1; }
	deploy/k8s/push.sh "$(REGISTRY)"
