# kci — see README.md. Both entry points install their own prerequisites.
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go

# Linters, pinned: `go run pkg@version` builds them from the module proxy
# (no prebuilt binaries) and caches the build in GOCACHE.
STATICCHECK   ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOLANGCI_LINT ?= github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
DEADCODE      ?= golang.org/x/tools/cmd/deadcode@v0.49.0

.PHONY: all deps kci demo test unit lint
all: kci

deps:
	@./scripts/install-deps.sh

# -buildvcs=auto: kci --version and run.json name the revision built
# (GOFLAGS may say -buildvcs=false; a tarball without .git still builds).
kci:
	$(GO) build -buildvcs=auto -o bin/kci ./cmd/kci

# The main job: the mission's example patch on the embedded default base.
demo: deps kci
	./bin/kci test patches/rht-no-shrink.patch

# Everything, including integration tests that build real kernels with kci
# (cached under $$KCI_CACHE or ~/.cache/kci) and boot them in QEMU.
# Lint runs first: it fails in minutes, the tests take most of an hour.
# -p 4: every package starts at once, so the trees' kernel builds begin
# as soon as the shared stock kernel is built and overlap the other
# packages' boots (TCG runs a guest on one core); with the default of one
# package per core they waited for unrelated packages to finish.
test: deps lint
	$(GO) test -p 4 -timeout 85m ./...

# vet, staticcheck, golangci-lint with .golangci.yml (errcheck, govet,
# ineffassign, staticcheck, unused, depguard), and deadcode over programs
# and tests (golangci's unused misses exported names). Cold, the two linters' builds take
# about 1.5 and 3 minutes on 2 cores; warm, seconds.
lint:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(GOLANGCI_LINT) run ./...
	@dead=$$($(GO) run $(DEADCODE) -test ./...) || exit 1; \
	if [ -n "$$dead" ]; then echo "$$dead"; echo "deadcode: functions no program or test reaches; delete them"; exit 1; fi

# Unit tests only: no kernel build, no QEMU.
unit:
	$(GO) test -short ./...
