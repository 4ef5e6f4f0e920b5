package boot

import (
	"sort"
	"strings"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/vm/tcgplugin"
)

// classEntries are the kernel functions whose calls begin each stack
// class (tcgplugin's README, Stack classes): the innermost one on a
// vCPU's stack names the work a block entry ran in. Hard interrupts
// are their handlers' bodies on the IRQ stack (not the idtentry
// wrappers, which run softirqs on their way out); softirqs start at
// __do_softirq (handle_softirqs from 6.10); deferred work is a
// workqueue item's or an RCU callback batch's.
var classEntries = []struct {
	class  tcgplugin.Class
	name   string
	prefix bool
}{
	{tcgplugin.ClassHardIRQ, "__common_interrupt", false},
	{tcgplugin.ClassHardIRQ, "__sysvec_", true},
	{tcgplugin.ClassSoftIRQ, "__do_softirq", false},
	{tcgplugin.ClassSoftIRQ, "handle_softirqs", false},
	{tcgplugin.ClassSyscall, "do_syscall_64", false},
	{tcgplugin.ClassSyscall, "do_int80_syscall_32", false},
	{tcgplugin.ClassSyscall, "do_fast_syscall_32", false},
	{tcgplugin.ClassDeferred, "process_one_work", false},
	{tcgplugin.ClassDeferred, "rcu_do_batch", false},
}

// contextMarks are the marks for k's kernel, in address order: each of
// classEntries its vmlinux has. A kernel without some (another
// architecture's entry, an older name) gets the others.
func (b *VMBooter) contextMarks(k *kernel.Artifacts) ([]tcgplugin.Mark, error) {
	syms, err := b.kernelSymbols(k.Vmlinux)
	if err != nil {
		return nil, err
	}
	starts := syms.Starts(func(name string) bool {
		_, ok := classOf(name)
		return ok
	})
	var out []tcgplugin.Mark
	for name, addr := range starts {
		c, _ := classOf(name)
		out = append(out, tcgplugin.Mark{Class: c, Addr: addr})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, nil
}

func classOf(name string) (tcgplugin.Class, bool) {
	for _, e := range classEntries {
		if name == e.name || e.prefix && strings.HasPrefix(name, e.name) {
			return e.class, true
		}
	}
	return 0, false
}
