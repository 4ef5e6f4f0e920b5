package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/kci-dev/kci/ci"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/vm"
)

// What is asked of the host is checked against what it has before any
// work: a guest bigger than the machine fails minutes later, inside QEMU,
// after the kernels were built.

// meminfo is where the host's memory is read; a test may point it elsewhere.
var meminfo = "/proc/meminfo"

// hostMemMiB is the host's MemTotal in MiB, 0 when it cannot be read (the
// check is then skipped: QEMU will say).
func hostMemMiB() int {
	f, err := os.Open(meminfo)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}

// checkGuestSize refuses a guest the host cannot hold: more vCPUs than
// host CPUs (each vCPU is a host thread; more would time-share and
// measure the sharing), more memory than the host has, pinning to CPUs
// it lacks. what names the input ("--cpus", "kci.yaml:31: vm.cpus").
func checkGuestSize(cpusWhat string, cpus int, memWhat string, mib int, pin []int) error {
	if n := runtime.NumCPU(); cpus > n {
		return job.Usagef("%s %d: the host has %d CPUs", cpusWhat, cpus, n)
	}
	if host := hostMemMiB(); host > 0 && mib > host {
		return job.Usagef("%s %dM: more than the host's %.1f GiB (%s MemTotal)", memWhat, mib, float64(host)/1024, meminfo)
	}
	for _, c := range pin {
		if n := runtime.NumCPU(); c >= n {
			return job.Usagef("--pin: CPU %d: the host has CPUs 0-%d", c, n-1)
		}
	}
	return nil
}

// checkPin parses a --pin list and checks it against the host's CPUs.
func checkPin(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	cpus, err := vm.ParseCPUList(s)
	if err != nil {
		return nil, job.Usagef("--pin: %v", err)
	}
	return cpus, checkGuestSize("--cpus", 0, "--memory", 0, cpus)
}

// checkResultCacheEnv refuses a $KCI_RESULT_CACHE the result cache would
// refuse later, after the builds.
func checkResultCacheEnv() error {
	switch v := os.Getenv(resultCacheEnv); v {
	case "", "on", "off":
		return nil
	default:
		return job.Usagef("$%s=%q: want on or off", resultCacheEnv, v)
	}
}

// checkPostEnv refuses, before any work, a post that could not be sent:
// no token (unless a dry run), no repository, nothing to post to. kci
// post and kci test --post both check here.
func checkPostEnv(o postOptions) error {
	env, err := ci.FromEnv()
	if err != nil {
		return job.Usagef("post: %v", err)
	}
	if !o.dryRun && env.Token.Empty() {
		return job.Usagef("post: no GITHUB_TOKEN in the environment (the token is read only from there); a dry run prints what would be sent: kci post --dry-run, kci test --post-dry-run")
	}
	repo := o.repo
	if repo == "" {
		repo = env.Repository
	}
	if repo == "" {
		return job.Usagef("post: no repository: give --repo OWNER/NAME or set GITHUB_REPOSITORY")
	}
	if _, _, err := ci.ParseRepo(repo); err != nil {
		return job.Usagef("post: %v", err)
	}
	fork := env.HeadOwner != "" && env.HeadBranch != ""
	if o.pr == 0 && env.PR == 0 && o.sha == "" && env.HeadSHA == "" && !fork {
		return job.Usagef("post: nothing to post to: give --pr N (and --sha), or run in a pull_request or workflow_run workflow")
	}
	return nil
}

// statInput refuses a file argument that is not there, naming it.
func statInput(what, path string) error {
	if _, err := os.Stat(path); err != nil {
		return job.Usagef("%s %s: %v", what, path, unwrapPath(err))
	}
	return nil
}

// unwrapPath is an *os.PathError's cause alone: the path is said once.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// notRunDir says why dir is not a saved run, for the verbs that read one.
func notRunDir(verb, dir string, err error) error {
	if _, serr := os.Stat(dir); serr != nil {
		return job.Usagef("%s: %s: %v", verb, dir, unwrapPath(serr))
	}
	return job.Usagef("%s: %s: not a kci run directory (%v)", verb, dir, err)
}
