package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHostLinksNoAgent: the host binary links neither the guest agent's
// packages nor what only the agent needs (netlink, cilium/ebpf's loader
// and links); it speaks to the agent through wire. kernel/ reads
// vmlinux's BTF, so cilium/ebpf/btf and what that needs stay.
func TestHostLinksNoAgent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// Each of these and the packages under it, but cilium/ebpf only
	// itself: its btf package (and btf's own imports) are the host's too.
	agentOnly := []string{"github.com/kci-dev/kci/suite", "github.com/kci-dev/kci/bpf",
		"github.com/cilium/ebpf/link", "github.com/cilium/ebpf/rlimit", "github.com/cilium/ebpf/features",
		"github.com/vishvananda/netlink", "github.com/vishvananda/netns"}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/cilium/ebpf" {
			t.Errorf("kci links %s, the guest agent's BPF loader", p)
		}
		for _, a := range agentOnly {
			if p == a || strings.HasPrefix(p, a+"/") {
				t.Errorf("kci links %s, which only the guest agent needs", p)
			}
		}
	}
}

// TestHostLinksNoGoimports: x/tools' goimports index creates
// $HOME/.cache/goimports when its package initializes, so a kci that
// linked it (through mkuimage) made that directory on every start, even
// for --version. u-root's layer is built by cmd/kci-uroot, a child.
func TestHostLinksNoGoimports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "golang.org/x/tools/") || strings.HasPrefix(p, "github.com/u-root/mkuimage/") {
			t.Errorf("kci links %s, which writes to $HOME when kci starts", p)
		}
	}
}
