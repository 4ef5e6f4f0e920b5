package childenv

import (
	"slices"
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	in := []string{
		"PATH=/usr/bin", "HOME=/root", "GOFLAGS=-mod=mod", "KCI_CACHE=/c", "GITHUB_REPOSITORY=o/r",
		"GIT_AUTHOR_NAME=kci",
		"GITHUB_TOKEN=ghs_x", "GH_TOKEN=x", "ACTIONS_RUNTIME_TOKEN=x", "ACTIONS_ID_TOKEN_REQUEST_URL=https://x",
		"AWS_SECRET_ACCESS_KEY=x", "github_token=x", "SSH_AUTH_SOCK=/tmp/agent", "GITHUB_ENV=/tmp/env",
		"GITHUB_OUTPUT=/tmp/out", "NPM_AUTH=x",
	}
	got := Filter(in)
	want := []string{"PATH=/usr/bin", "HOME=/root", "GOFLAGS=-mod=mod", "KCI_CACHE=/c", "GITHUB_REPOSITORY=o/r", "GIT_AUTHOR_NAME=kci"}
	if !slices.Equal(got, want) {
		t.Errorf("Filter = %q, want %q", got, want)
	}
}

func TestEnvironDropsTokenKeepsExtra(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_secret")
	t.Setenv("ACTIONS_RUNTIME_TOKEN", "rt")
	env := Environ("ARCH=x86_64")
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "ghs_secret") || strings.Contains(joined, "ACTIONS_RUNTIME_TOKEN") {
		t.Errorf("secret in child environment:\n%s", joined)
	}
	if env[len(env)-1] != "ARCH=x86_64" {
		t.Errorf("extra not appended last: %q", env[len(env)-1])
	}
}
