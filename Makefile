# kci — see README.md. Both entry points install their own prerequisites.
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go

.PHONY: all deps kci demo test unit
all: kci

deps:
	@./scripts/install-deps.sh

kci:
	$(GO) build -o bin/kci ./cmd/kci

# The main job: the mission's example patch on the embedded default base.
demo: deps kci
	./bin/kci test patches/rht-no-shrink.patch

# Everything, including integration tests that build real kernels with kci
# (cached under $$KCI_CACHE or ~/.cache/kci) and boot them in QEMU.
test: deps
	$(GO) vet ./...
	$(GO) test -timeout 85m ./...

# Unit tests only: no kernel build, no QEMU.
unit:
	$(GO) test -short ./...
