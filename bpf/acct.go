package bpf

import "github.com/cilium/ebpf"

// The context accountant is not a benchmark object either (see
// profile.go): it runs beside every variant's programs in the window.

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" acct c/acct.bpf.c

// Accountant object layout (c/acct.bpf.c).
const (
	AcctNsMap      = "acct_ns"
	AcctEntriesMap = "acct_entries"
	AcctSentMap    = "sent"
	AcctTrafficMap = "traffic"
	AcctAgentTGID  = "agent_tgid"
	// AcctTrafficThread is a traffic map value: a thread whose read and
	// write are the packet path.
	AcctTrafficThread = uint32(1)
)

// AcctCategories names the accountant's categories by index (enum
// acct_cat): what each ns of a CPU's time was spent on.
var AcctCategories = []string{
	"unsynced", "idle", "path", "traffic", "agent", "other", "hardirq",
	"softirq:hi", "softirq:timer", "softirq:net_tx", "softirq:net_rx", "softirq:block",
	"softirq:irq_poll", "softirq:tasklet", "softirq:sched", "softirq:hrtimer", "softirq:rcu",
}

// AcctSpec returns a fresh, unloaded spec of the context accountant.
func AcctSpec() (*ebpf.CollectionSpec, error) {
	return loadAcct()
}
