package doctor

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/vm"
)

// The longest checks kci doctor prints stay within lines.Width, and the
// wrapping keeps every word.
func TestWriteWidth(t *testing.T) {
	denied := fmt.Errorf("no usable /dev/kvm: %w", &fs.PathError{Op: "open", Path: "/dev/kvm", Err: syscall.EACCES})
	checks := []Check{
		noKVM(denied, map[string]bool{"vmx": true}),
		noKVM(fmt.Errorf("no usable /dev/kvm: %w", &fs.PathError{Op: "open", Path: "/dev/kvm", Err: syscall.ENOENT}),
			map[string]bool{"hypervisor": true}),
		choiceCheck(vm.AccelChoice{Accel: vm.AccelKVM, Case: vm.CaseMSR, CPU: "host,-arch-capabilities",
			CPUReason: "-cpu host: QEMU died at start under KVM, failed to set MSR 0x10a (IA32_ARCH_CAPABILITIES)",
			Reason:    "reached the agent"}, true, "/c/v.json"),
		choiceCheck(vm.AccelChoice{Accel: vm.AccelTCG, Case: vm.CaseNoAgent,
			Reason: "a KVM guest (-cpu host) did not reach the agent within 20s; its console printed nothing"},
			true, "/home/someone/.cache/kci/kvm-choice.json"),
		{Name: "cpu frequency", Status: Warn,
			Detail: "not clamped on 16 of 16 pinned CPUs (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15): frequency changes add noise",
			Fix:    "set scaling_min_freq = scaling_max_freq on those CPUs, e.g. sudo cpupower -c 0-15 frequency-set -d F -u F"},
		{Name: "cache health", Status: OK,
			Detail: "repaired 3 things interrupted runs left: removed the lock of a dead run (pid 4242); " +
				"moved the half-made tree /home/someone/.cache/kci/trees/6.12.117-tinyconfig-0123456789ab to the trash; " +
				"removed an unfinished import of linux-source-6.12"},
	}
	var b strings.Builder
	if err := Write(&b, checks); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	col := strings.Repeat(" ", 6+len("cpu frequency")+2) // the detail column, past the longest name
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > lines.Width {
			t.Errorf("%d columns > %d: %s", n, lines.Width, l)
		}
		if l != "" && !strings.HasPrefix(l, col) && (len(l) < len(col) || l[len(col)-1] != ' ' || l[len(col)] == ' ') {
			t.Errorf("line not aligned on the detail column %d: %q", len(col), l)
		}
	}
	var want []string
	for _, c := range checks {
		want = append(want, strings.ToUpper(string(c.Status)), c.Name, c.Detail)
		if c.Status != OK && c.Fix != "" {
			want = append(want, "fix: "+c.Fix)
		}
	}
	if got, w := strings.Fields(out), strings.Fields(strings.Join(want, " ")); strings.Join(got, " ") != strings.Join(w, " ") {
		t.Errorf("wrapping lost or reordered words:\n%s", out)
	}
}
