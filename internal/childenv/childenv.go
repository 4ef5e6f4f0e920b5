// Package childenv builds the environment of kci's child processes. A
// child can be the pull request's own code (the kernel's Makefiles, a
// patched Kconfig script), so it must not inherit credentials kci holds:
// with `kci test --post` GITHUB_TOKEN is in kci's environment.
package childenv

import (
	"os"
	"strings"
)

// dropExact are variables that are secrets, or that let a child act for
// kci beyond its own process: GITHUB_ENV and friends are files whose
// content becomes the next steps' environment, PATH and outputs.
var dropExact = map[string]bool{
	"SSH_AUTH_SOCK":       true,
	"GITHUB_ENV":          true,
	"GITHUB_OUTPUT":       true,
	"GITHUB_PATH":         true,
	"GITHUB_STATE":        true,
	"GITHUB_STEP_SUMMARY": true,
}

// dropPrefix: ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_*,
// ACTIONS_CACHE_URL and the rest of the runner's internals.
var dropPrefix = []string{"ACTIONS_"}

// dropSubstr catches secrets by name: GITHUB_TOKEN, GH_TOKEN,
// AWS_SECRET_ACCESS_KEY, NPM_TOKEN, REGISTRY_PASSWORD, ...
var dropSubstr = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE_KEY", "API_KEY", "ACCESS_KEY"}

// dropSuffix: NPM_AUTH, NETRC-style *_AUTH; not a substring match, which
// would take GIT_AUTHOR_NAME, which git am needs.
var dropSuffix = []string{"_AUTH"}

// Secret reports whether the variable name is one a child must not see.
func Secret(name string) bool {
	n := strings.ToUpper(name)
	if dropExact[n] {
		return true
	}
	for _, p := range dropPrefix {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	for _, s := range dropSubstr {
		if strings.Contains(n, s) {
			return true
		}
	}
	for _, s := range dropSuffix {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// Filter returns env ("NAME=value" entries) without the secret ones.
func Filter(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !Secret(name) {
			out = append(out, kv)
		}
	}
	return out
}

// Environ is kci's own environment without secrets, plus extra. It is
// the only environment kci gives a child process.
func Environ(extra ...string) []string {
	return append(Filter(os.Environ()), extra...)
}
