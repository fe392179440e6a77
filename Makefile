# flightdeck's build. `make test` is what CI runs; `make run` runs the default suite.
GO        ?= go
BIN       := bin/flightdeck
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
FUZZTIME  ?= 20s

.PHONY: build test short fuzz run lint base-image bench clean

# Static (no cgo): the binary is also the tracer task verify copies into
# grading containers, which may have another libc, or none.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/flightdeck

# All tests, against the real engine (the offline base image is built first).
# The runner package's engine tests take the longest: they start at once,
# beside the other packages (two at a time), rather than after them. The
# fuzz tests' seeds run here as tests; `make fuzz` explores further.
# Cold on a slow 2-core machine (docs/testing.md) the test phase is
# CPU-bound (idle under 1 %): e2e took 1,829 s, runner 1,764 s and
# cmd/flightdeck 1,118 s side by side, so a schedule moves little; this one
# starts the three longest at once. -timeout keeps twice the longest cold
# package's time (e2e: 37.7 min, loaded) as margin: a hang, not a slow machine, ends it.
# go test's output goes through scripts/testsummary: what go test prints
# without -v, then each package's time and the slowest tests (the exit code
# is go test's).
SHELL     := /bin/bash
SLOWEST   := ./runner
# ALONE takes the engine's default address pools from everything else on
# it: it runs after the others.
ALONE     := github.com/flightdeck/flightdeck/e2e/pools
test: base-image
	@set -u; export FLIGHTDECK_REQUIRE_DOCKER=1; \
	$(GO) build -o bin/testsummary ./scripts/testsummary || exit 1; \
	( set -o pipefail; $(GO) test -json -count=1 -timeout 80m $(SLOWEST) | bin/testsummary ) & slow=$$!; \
	( set -o pipefail; $(GO) test -json -count=1 -timeout 80m $$($(GO) list ./... | grep -vx -e 'github.com/flightdeck/flightdeck/runner' -e '$(ALONE)') | bin/testsummary ); rc=$$?; \
	wait $$slow || rc=1; \
	( set -o pipefail; $(GO) test -json -count=1 -timeout 20m $(ALONE) | bin/testsummary ) || rc=1; \
	exit $$rc

# The tests that need no engine (-short), with the engine out of reach: a
# test that asks it for anything under -short fails here, since
# FLIGHTDECK_REQUIRE_DOCKER=1 turns a missing engine into a failure.
short:
	FLIGHTDECK_REQUIRE_DOCKER=1 DOCKER_HOST=unix:///nonexistent/flightdeck-short.sock $(GO) test -short -count=1 ./...

# Each parser's fuzz test, briefly. Go's fuzzer minimizes each new input for
# up to 60 s by default, longer than the whole run, and a run whose time
# limit falls in a minimization ends with "context deadline exceeded" and no
# failing input: minimization is capped, and such a run is tried once more.
# A failing input always fails.
fuzz:
	@for spec in $$($(GO) run ./scripts/fuzztargets); do \
		pkg=$${spec%%:*}; fn=$${spec##*:}; \
		echo "fuzz $$pkg $$fn"; \
		for try in 1 2; do \
			out=$$($(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg 2>&1); rc=$$?; \
			echo "$$out"; \
			[ $$rc -eq 0 ] && break; \
			if [ $$try -eq 2 ] || echo "$$out" | grep -q "Failing input written" || ! echo "$$out" | grep -q "context deadline exceeded"; then exit 1; fi; \
			echo "fuzz $$fn: stopped at its time limit without a failing input; once more"; \
		done; \
	done

# The default suite (local.yaml): oracles pass, nops fail.
run: build base-image
	./$(BIN) run

# Formatting, a tidy module, vet and staticcheck (a pinned version, run
# through the module proxy: nothing to install first).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

base-image:
	bash sandbox/base-image.sh

bench: build base-image
	$(GO) run ./scripts/bench

clean:
	rm -rf bin
