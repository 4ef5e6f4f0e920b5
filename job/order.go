package job

// bootOrder is the order in which repetition rep (from 1) boots the roles
// of a tree: with two kernels, ABBA — base first in odd repetitions,
// patched first in even ones (B P, P B, B P, …) — so a drift over the run
// (a host warming up, a neighbour starting) falls on both kernels alike
// instead of always on the one booted second. One role stays as is.
func bootOrder(rep int, roles []string) []string {
	if len(roles) != 2 || rep%2 == 1 {
		return roles
	}
	return []string{roles[1], roles[0]}
}
