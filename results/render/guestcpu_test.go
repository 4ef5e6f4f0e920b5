package render

import (
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
	want := "-cpu host,-arch-capabilities (" + why + ")"
	var txt strings.Builder
	if err := Text(&txt, verdict.AnalyzeRun(run), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	// The text wraps at 100 columns: compare words.
	flat := strings.Join(strings.Fields(txt.String()), " ")
	if !strings.Contains(flat, want) || !strings.Contains(flat, "accelerator: "+h.AccelReason) {
		t.Errorf("text report lacks the model and why:\n%s", txt.String())
	}
	if md := MarkdownRun(verdict.AnalyzeRun(run)); !strings.Contains(md, "host,-arch-capabilities") || !strings.Contains(md, "MSR 0x10a") {
		t.Errorf("markdown report lacks the model:\n%s", md)
	}
	// Requested accelerators and TCG's default model say no more than that.
	if got := guestCPU(results.Host{AccelReason: "requested", GuestCPU: "max"}); len(got) != 1 || got[0] != "-cpu max" {
		t.Errorf("requested tcg: %q", got)
	}

	s := &results.Series{Accel: results.AccelKVM, AccelReason: h.AccelReason, GuestCPU: "host,-arch-capabilities @maintainer <b>", GuestCPUReason: why}
	var st strings.Builder
	if err := SeriesText(&st, s); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.String(), "machine: accel kvm · accelerator: ") || !strings.Contains(st.String(), why) {
		t.Errorf("series text: %q", st.String())
	}
	md := SeriesMarkdown(s)
	if !strings.Contains(md, "machine: accel kvm") || strings.Contains(md, "@maintainer") || strings.Contains(md, "<b>") {
		t.Errorf("series markdown names the machine unescaped or not at all:\n%s", md)
	}
}
