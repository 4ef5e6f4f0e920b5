package bench

import (
	"sort"

	"github.com/kci-dev/kci/suite/profile"
	"github.com/kci-dev/kci/wire"
)

// trafficCPUs are the CPUs the servers and clients of p run on in a guest
// of ncpu CPUs, sorted: the ones the user profiles (`perf record -C`).
func trafficCPUs(p wire.BenchParams, ncpu int) []int {
	seen := map[int]bool{}
	var out []int
	for i := 0; i < p.Pairs; i++ {
		for _, c := range []int{
			cpuFor(p.ServerCPUs, i, wire.DefaultBench().ServerCPUs, ncpu),
			cpuFor(p.ClientCPUs, i, wire.DefaultBench().ClientCPUs, ncpu),
		} {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Ints(out)
	return out
}

// profileWindow starts sampling the traffic CPUs for one variant's
// measurement window when the plan asks for profiles (env.profile set).
// The returned function stops the sampler and hands the profile on; a
// sampler that fails says so in its profile (Error) rather than failing
// the variant.
func profileWindow(env *Env, p wire.BenchParams, name string) func() {
	if env.profile == nil {
		return func() {}
	}
	cpus := trafficCPUs(p, env.ncpu)
	prof, err := profile.Start(cpus, wire.ProfileFreqHz)
	if err != nil {
		env.profile(wire.Profile{Variant: name, CPUs: cpus, FreqHz: wire.ProfileFreqHz, Error: err.Error()}) //nolint:errcheck // the variant's own event reports the run
		return func() {}
	}
	return func() {
		st, folded, err := prof.Stop()
		out := wire.Profile{Variant: name, Folded: folded, CPUs: st.CPUs, FreqHz: st.FreqHz,
			Window: st.Elapsed, Samples: st.Samples, Dropped: st.Dropped}
		if err != nil {
			out.Error = err.Error()
		}
		env.logf("profile: %s: %d samples on CPUs %v", name, st.Samples, st.CPUs)
		if err := env.profile(out); err != nil {
			env.logf("profile: %s: %v", name, err)
		}
	}
}
