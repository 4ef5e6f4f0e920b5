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
# The tests append each kernel they ask for to the ledger (job/jobtest):
# summed by package at the end, it says who built what and how long the
# others waited for it, which a package's time alone does not.
KCI_TEST_LEDGER=$(mktemp "${TMPDIR:-/tmp}/kci-test-ledger.XXXXXX")
export KCI_TEST_LEDGER
./bin/kci build >"$log" 2>&1 &
stock=$!
# ledger prints the kernels the tests asked for, by package: built by
# that package (wall time, and the CPU time make and the compilers used:
# on a shared host the gap is time spent waiting for a CPU), waited for
# (another package or the stock build beside the linters was building
# it) and found in the cache.
ledger() {
  [ -s "$KCI_TEST_LEDGER" ] || { rm -f "$KCI_TEST_LEDGER"; return 0; }
  echo "make test: the tests' kernels by package (count, seconds):"
  awk -F'\t' '
    { p[$1] = 1; n[$1, $4]++; s[$1, $4] += $5; c[$1] += $6 }
    END {
      printf "  %-16s %27s %16s %7s\n", "package", "built here (wall, CPU)", "waited", "cached"
      for (k in p) printf "  %-16s %5d %8.0f s %8.0f s %5d %8.0f s %7d\n", k, n[k, "built"], s[k, "built"], c[k], n[k, "waited"], s[k, "waited"], n[k, "cached"]
    }' "$KCI_TEST_LEDGER" | { IFS= read -r head; echo "$head"; LC_ALL=C sort; }
  echo "make test: each kernel a test built (wall and CPU seconds, package, test, kernel):"
  awk -F'\t' '$4 == "built" { printf "  %6.0f %6.0f  %-12s %s  %s\n", $5, $6, $1, $2, $3 }' "$KCI_TEST_LEDGER" | sort -rn
  rm -f "$KCI_TEST_LEDGER"
}

# finish stops the build if it still runs (the run failed first), shows
# its log unless it succeeded, the ledger and the run's CPU time.
finish() {
  ledger
  if [ -n "$stock" ]; then
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
  fi
  cputime
}

# cputime prints the CPU time of everything the run started (this
# shell's reaped children, fields 16-17 of /proc/$$/stat: each child
# waits for its own), against the wall time and the CPUs there were:
# near wall × CPUs, the run was CPU-bound and only less work shortens it.
cputime() {
  local stat hz
  read -r stat </proc/$$/stat
  stat=${stat##*") "} # the fields after "pid (comm) "
  set -- $stat         # $1 is field 3: cutime (16) is ${14}, cstime (17) ${15}
  hz=$(getconf CLK_TCK)
  echo "make test: $SECONDS s of wall time on $(nproc) CPUs; CPU time of everything it ran: user $((${14} / hz)) s, system $((${15} / hz)) s"
}
trap finish EXIT

"$MAKE" --no-print-directory lint
# -vet=off: lint has run go vet's full set on every package, tests included.
"$GO" test -p 8 -vet=off -timeout 85m ./...
