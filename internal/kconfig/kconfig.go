// Package kconfig holds the kernel-config facts both sides of kci need:
// the host's config policy (kernel/) and the guest's sanity check
// (suite/). It is a leaf so the guest agent does not import the kernel
// builder, and its initramfs does not ship it.
package kconfig

// Forbidden debug options: each one changes what a per-packet number means.
// Lockdep silently on is what voided the user's first results.
var Forbidden = []string{
	"LOCKDEP", "PROVE_LOCKING", "DEBUG_LOCK_ALLOC", "DEBUG_SPINLOCK", "DEBUG_MUTEXES",
	"DEBUG_RWSEMS", "DEBUG_WW_MUTEX_SLOWPATH", "DEBUG_ATOMIC_SLEEP", "PROVE_RCU", "LOCK_STAT",
	"DEBUG_LOCKDEP", "KASAN", "KCSAN", "KMSAN", "UBSAN", "KCOV", "DEBUG_OBJECTS",
	"DEBUG_PAGEALLOC", "DEBUG_KMEMLEAK", "SLUB_DEBUG_ON", "DEBUG_VM", "DEBUG_NET",
	"DEBUG_PREEMPT", "PAGE_POISONING", "DEBUG_LIST", "DEBUG_SG", "FAULT_INJECTION",
	"KFENCE", "RCU_TORTURE_TEST", "TRACE_IRQFLAGS", "PREEMPTIRQ_TRACEPOINTS", "DEBUG_KOBJECT",
}
