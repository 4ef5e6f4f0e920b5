package vm

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/report/*.golden from the parser's output")

func formatReport(r *Report) string {
	if r == nil {
		return "NO REPORT\n"
	}
	return fmt.Sprintf("TITLE: %s\nFRAME: %s\n\n%s\n", r.Title, r.Frame, r.Excerpt)
}

// TestReportGolden parses one console sample per report family and
// compares with the expected title, guilty frame and excerpt.
func TestReportGolden(t *testing.T) {
	consoles, err := filepath.Glob("testdata/report/*.console")
	if err != nil || len(consoles) == 0 {
		t.Fatalf("no console samples: %v", err)
	}
	for _, c := range consoles {
		name := strings.TrimSuffix(filepath.Base(c), ".console")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(c)
			if err != nil {
				t.Fatal(err)
			}
			got := formatReport(parseReport(string(b)))
			golden := strings.TrimSuffix(c, ".console") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("report for %s:\n--- got\n%s--- want\n%s", c, got, want)
			}
		})
	}
}

// The same crash at other addresses, offsets, PIDs and times must give
// the same title, so base and patched runs compare equal.
func TestReportTitleNormalised(t *testing.T) {
	a := `[    2.611111] BUG: kernel NULL pointer dereference, address: 0000000000000008
[    2.611888] RIP: 0010:skb_ext_find_meta.isra.0+0x12/0x50
[    2.613333] ---[ end trace 0000000000000000 ]---`
	b := `[   17.000001] BUG: kernel NULL pointer dereference, address: 0000000000000010
[   17.000002] RIP: 0010:skb_ext_find_meta.isra.3+0x1a/0x60
[   17.000003] ---[ end trace 0000000000000000 ]---`
	ra, rb := parseReport(a), parseReport(b)
	if ra == nil || rb == nil {
		t.Fatalf("reports not found: %v %v", ra, rb)
	}
	if ra.Title != rb.Title {
		t.Errorf("titles differ: %q vs %q", ra.Title, rb.Title)
	}
	p1 := parseReport("[ 1.0] Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b")
	p2 := parseReport("[ 9.5] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009")
	if p1 == nil || p2 == nil || p1.Title != p2.Title {
		t.Errorf("panic titles differ: %+v vs %+v", p1, p2)
	}
	if !strings.HasPrefix(p1.Title, "kernel panic: Attempted to kill init!") {
		t.Errorf("panic title = %q", p1.Title)
	}
}

func TestWatchdogCompletes(t *testing.T) {
	var w Watchdog
	lines := []string{
		"[    1.0] Run /init as init process",
		"[    3.1] WARNING: CPU: 1 PID: 97 at kernel/sysctl.c:1234 kci_fault_write+0x2a/0x40",
		"[    3.2] Call Trace:",
		"[    3.3]  kci_fault_write+0x2a/0x40",
	}
	for _, l := range lines {
		if w.Feed(l) {
			t.Fatalf("report complete before its end marker, at %q", l)
		}
	}
	if !w.Pending() {
		t.Fatal("header not seen")
	}
	if !w.Feed("[    3.4] ---[ end trace 0000000000000000 ]---") {
		t.Error("end marker did not complete the report")
	}
	if r := w.Report(); r == nil || r.Title != "WARNING in kci_fault_write" {
		t.Errorf("report = %+v", r)
	}

	// Without an end marker the report is complete after maxReport lines.
	var w2 Watchdog
	w2.Feed("[ 1.0] Call Trace:")
	done := false
	for i := 0; i < maxReport && !done; i++ {
		done = w2.Feed(fmt.Sprintf("[ 1.%d]  f%d+0x1/0x2", i, i))
	}
	if !done {
		t.Error("report without end marker never completed")
	}
}

func TestBugKind(t *testing.T) {
	for in, want := range map[string]string{
		"kernel NULL pointer dereference, address: 0000000000000008":           "kernel NULL pointer dereference",
		"soft lockup - CPU#1 stuck for 22s! [kci-guest:101]":                   "soft lockup",
		"scheduling while atomic: kci-guest/99/0x00000002":                     "scheduling while atomic",
		"sleeping function called from invalid context at kernel/sched/core.c": "sleeping function called from invalid context",
		"unable to handle page fault for address: ffffc90000000000":            "unable to handle page fault",
		"Bad page state in process kci-guest  pfn:0a1b2":                       "Bad page state",
	} {
		if got := bugKind(in); got != want {
			t.Errorf("bugKind(%q) = %q, want %q", in, got, want)
		}
	}
}

// parseReport returns the first crash report in a console log, or nil.
func parseReport(console string) *Report {
	var w Watchdog
	for _, l := range strings.Split(console, "\n") {
		if w.Feed(l) {
			break
		}
	}
	return w.Report()
}
