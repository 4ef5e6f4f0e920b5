package kernel

import (
	"context"
	"strings"
	"testing"
)

// The kernel's Makefiles are the pull request's code: with kci test
// --post, GITHUB_TOKEN is in kci's environment and must not reach them.
func TestCommandEnvHasNoSecrets(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_leaked0123456789")
	t.Setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "oidc")
	out, err := command{env: []string{"KCI_EXTRA=1"}}.run(context.Background(), "env")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "ghs_leaked") || strings.Contains(out, "ACTIONS_ID_TOKEN") {
		t.Errorf("child environment carries a secret:\n%s", out)
	}
	if !strings.Contains(out, "KCI_EXTRA=1") {
		t.Errorf("child environment lost the extra variable:\n%s", out)
	}
}
