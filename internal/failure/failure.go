// Package failure is kci's one vocabulary for a failed boot: what vm
// classifies an error as, what job maps to an exit code (job/exit.go's
// bootExit, the one table), and what run.json and series.json store in a
// boot's error_kind.
package failure

// The kinds of a failed boot.
const (
	None    = ""
	Boot    = "boot"    // the kernel did not come up
	Crash   = "crash"   // panic, oops, BUG, WARN on the console
	Timeout = "timeout" // hung: a step passed its deadline
	Agent   = "agent"   // kci's guest agent failed on this kernel
	Infra   = "infra"   // QEMU, the image, the disk: the machine, never the patch
	// Interrupted: the run's context was cancelled (SIGINT, SIGTERM):
	// nobody's fault; the job exits as interrupted.
	Interrupted = "interrupted"
	// Cancelled: stopped because another boot of its kernel failed
	// first; nobody's fault, and never the job's error.
	Cancelled = "cancelled"
)
