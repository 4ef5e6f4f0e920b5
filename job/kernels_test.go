package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// kci.yaml's config.production is the drift report's reference; without
// it, Debian's config is.
func TestDriftHonoursConfigProduction(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	final := write("config", "CONFIG_HZ=1000\nCONFIG_PREEMPT_NONE=y\n")
	write("prod.config", "CONFIG_HZ=250\nCONFIG_PREEMPT_NONE=y\n")
	b := &Builder{Project: &project.File{Dir: dir, Config: project.Config{Production: "prod.config"}}}

	if got := b.Production(); got != filepath.Join(dir, "prod.config") {
		t.Errorf("Production() = %q, want kci.yaml's, relative to its directory", got)
	}
	a, err := b.withDrift(context.Background(), &kernel.Artifacts{Config: final, Release: "6.12.0-kci"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Drift) != 1 || a.Drift[0].Option != "HZ" || a.Drift[0].Here != "1000" || a.Drift[0].Production != "250" {
		t.Errorf("drift %+v, want only HZ: here 1000, production 250", a.Drift)
	}

	// An unreadable reference is an error naming it, never "no drift".
	b.Project.Config.Production = "missing.config"
	if _, err := b.withDrift(context.Background(), &kernel.Artifacts{Config: final}); err == nil || !strings.Contains(err.Error(), "missing.config") {
		t.Errorf("missing production config: err %v, want one naming it", err)
	} else if ee := Classify("build", err).(*ExitError); ee.Code != ExitInternal {
		t.Errorf("missing production config blamed with exit %d, want the machine's (%d)", ee.Code, ExitInternal)
	}

	b.Project.Config.Production = ""
	if got := b.Production(); got != kernel.DebianProductionConfig {
		t.Errorf("Production() without config.production = %q, want Debian's %q", got, kernel.DebianProductionConfig)
	}
}
