package render

import (
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// Every report names the kci that made the run, once, on the host line.
func TestReportsNameTheKCIVersion(t *testing.T) {
	r := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(30, 3, 100, 0.01), runtest.Normal(40, 3, 100, 0.01))
	r.KCIVersion = "v0.0.0-20261201083846-c8b9143d7460"
	var txt strings.Builder
	if err := Text(&txt, verdict.AnalyzeRun(r), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	md := MarkdownRun(verdict.AnalyzeRun(r))
	for name, out := range map[string]string{"text": txt.String(), "markdown": md} {
		if n := strings.Count(out, "kci v0.0.0-20261201083846-c8b9143d7460"); n != 1 {
			t.Errorf("%s report names the kci version %d times, want once:\n%s", name, n, out)
		}
	}
}
