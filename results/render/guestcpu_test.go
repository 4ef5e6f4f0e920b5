package render

import (
	"github.com/kci-dev/kci/internal/golden"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// Every report names the accelerator's reason and the -cpu model with
// why: the text and Markdown host line, and the series reports. Values
// from a record are escaped in Markdown.
func TestReportsNameGuestCPU(t *testing.T) {
	const why = "-cpu host: QEMU died at start under KVM, failed to set MSR 0x10a (IA32_ARCH_CAPABILITIES); kci boots without arch-capabilities"
	h := results.Host{Accel: results.AccelKVM, AccelReason: "KVM guest reached the agent in 1.1s with -cpu host,-arch-capabilities",
		GuestCPU: "host,-arch-capabilities", GuestCPUReason: why}
	run := &results.Run{Schema: results.SchemaVersion, ID: "0badcafe", Start: time.Unix(0, 0).UTC(), Host: h}
	// The reports are the goldens testdata/TestReportsNameGuestCPU/.
	var txt strings.Builder
	if err := Text(&txt, verdict.AnalyzeRun(run), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "report.txt", txt.String())
	golden.Own(t, "report.md", MarkdownRun(verdict.AnalyzeRun(run)))
	// Requested accelerators and TCG's default model say no more than that.
	if got := guestCPU(results.Host{AccelReason: "requested", GuestCPU: "max"}); len(got) != 1 || got[0] != "-cpu max" {
		t.Errorf("requested tcg: %q", got)
	}
	if got := guestCPU(h); len(got) != 2 || got[0] != "accelerator: "+h.AccelReason || got[1] != "-cpu host,-arch-capabilities ("+why+")" {
		t.Errorf("kvm with a reason: %q, want the accelerator's reason, then the model and why", got)
	}

	s := &results.Series{Accel: results.AccelKVM, AccelReason: h.AccelReason, GuestCPU: "host,-arch-capabilities @maintainer <b>", GuestCPUReason: why}
	var st strings.Builder
	if err := SeriesText(&st, s); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "series.txt", st.String())
	md := SeriesMarkdown(s)
	golden.Own(t, "series.md", md)
	// Targeted as well: no golden rewritten by -update may let the
	// record's mention or markup through.
	if strings.Contains(md, "@maintainer") || strings.Contains(md, "<b>") {
		t.Errorf("series markdown names the machine unescaped:\n%s", md)
	}
}
