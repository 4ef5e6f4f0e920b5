#!/usr/bin/env bash
# make test: the linters, then every test, with the stock kernel building
# from the start. Every kernel the integration tests boot grows from
# stock (the ext and gtp trees, each fixture's patched kernel), so its
# build is the root of the run's longest chain. Started here, it begins
# beside the linters and the test binaries' compile instead of after
# them (on a saturated 2-core host this does not make it finish sooner:
# the CPU is shared at one priority). The tests find it in kci's cache, or wait on its
# lock while it builds. A failed build here fails no test by itself (a
# test that needs the kernel builds it and reports its own error), and
# its log is shown.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
MAKE=${MAKE:-make}

log=$(mktemp "${TMPDIR:-/tmp}/kci-stock-build.XXXXXX")
./bin/kci build >"$log" 2>&1 &
stock=$!
# finish stops the build if it still runs (the run failed first), and
# shows its log unless it succeeded.
finish() {
  [ -n "$stock" ] || return 0
  kill "$stock" 2>/dev/null || true # ended already: nothing to stop
  local rc=0
  wait "$stock" || rc=$?
  stock=
  if [ "$rc" = 0 ]; then
    rm -f "$log"
  else
    echo "make test: the stock kernel's build beside the linters ended with exit $rc (a test that needs the kernel builds it itself); its log, $log:" >&2
    tail -20 "$log" >&2
  fi
}
trap finish EXIT

"$MAKE" --no-print-directory lint
# -vet=off: lint has run go vet's full set on every package, tests included.
"$GO" test -p 8 -vet=off -timeout 85m ./...
