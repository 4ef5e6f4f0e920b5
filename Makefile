# kci — see README.md. Both entry points install their own prerequisites.
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go

# Linters, pinned in tools/go.mod (a module of their own, so kci's go.mod
# does not carry their dependencies): built from the module proxy in one
# `go build`, which compiles the packages they share (x/tools) once, into
# bin/lint.
LINT := bin/lint

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
# scripts/test.sh starts the stock kernel's build (the root of every test
# kernel), runs lint beside it (lint fails in minutes, the tests take half
# an hour to an hour, by the host), then the tests with -p 8: the eight
# packages that build or boot kernels (cmd/kci, job, kernel, profile,
# suite, vm, results/verdict, vm/tcgplugin) start at once, so suite's two
# tree builds begin as soon as stock is built, beside the leaf builds and
# the boots, instead of waiting for a slot. The tests' kernel builds run
# at niceness 10 (kernel.buildNice): the boots beside them keep their CPU
# and their boot timeouts.
test: deps kci
	@GO="$(GO)" MAKE="$(MAKE)" ./scripts/test.sh

# vet, then golangci-lint with .golangci.yml (errcheck, govet, ineffassign,
# staticcheck, unused, depguard), and deadcode over programs and tests
# (golangci's unused misses exported names). staticcheck runs inside
# golangci-lint: the same analyzers (honnef.co/go/tools, one version in
# tools/go.mod) with the same checks, facts from dependencies included
# (a deprecated or side-effect-free call into another module is reported
# by both). Its own binary found nothing more, and cold it analyzed every
# dependency from source: 7 CPU-minutes of a 2-core CI, against half a
# minute in golangci-lint. Cold (empty GOCACHE, modules downloaded), vet
# takes 3-4 min on 2 cores (most of it compiles the dependencies the
# tests then reuse), the linters' build about 3 min, their runs under a
# minute; warm, seconds.
lint:
	$(GO) vet ./...
	cd tools && $(GO) build -o ../$(LINT)/ tool
	$(LINT)/golangci-lint run ./...
	@dead=$$($(LINT)/deadcode -test ./...) || exit 1; \
	if [ -n "$$dead" ]; then echo "$$dead"; echo "deadcode: functions no program or test reaches; delete them"; exit 1; fi

# Unit tests only: no kernel build, no QEMU.
unit:
	$(GO) test -short ./...
