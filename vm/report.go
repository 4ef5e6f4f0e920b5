package vm

import (
	"regexp"
	"slices"
	"strings"
)

// Report is a kernel crash report found on the console.
type Report struct {
	Title   string // normalised title, e.g. "WARNING in kci_fault_write"
	Frame   string // guilty frame, "" if none was found
	Excerpt string // the header line and the report that follows it
}

// A family is one kind of kernel report: the header that starts it and
// how its title is made.
type family struct {
	name   string
	header *regexp.Regexp // matched against the message, timestamp stripped
	// title builds the title from the header's submatches and the guilty
	// frame ("" when none was found).
	title func(m []string, frame string) string
	// frame says where the guilty function is: "header" (submatch 1 of
	// frameRe), "rip" (the RIP line) or "trace" (the call trace).
	frame   string
	frameRe *regexp.Regexp // for frame == "header"
}

func in(s, frame string) string { return s + " in " + frame }

// families in priority order: a line is tested against each in turn, so
// specific headers ("BUG: KASAN:") come before general ones ("BUG:").
var families = []family{
	{
		name:   "KASAN",
		header: regexp.MustCompile(`^BUG: KASAN: ([\w-]+) in (\S+)`),
		title: func(m []string, f string) string {
			return in("KASAN: "+m[1], f)
		},
		frame: "header", frameRe: regexp.MustCompile(`^BUG: KASAN: [\w-]+ in (\S+)`),
	},
	{
		name:   "UBSAN",
		header: regexp.MustCompile(`^UBSAN: ([\w-]+) in `),
		title:  func(m []string, f string) string { return in("UBSAN: "+m[1], f) },
		frame:  "trace",
	},
	{
		name:   "lockdep",
		header: regexp.MustCompile(`^(?:WARNING|INFO): (possible circular locking dependency|possible recursive locking|possible irq lock inversion dependency|inconsistent lock state|bad unlock balance|suspicious RCU usage|lock held when returning to user space|held lock freed)`),
		title: func(m []string, f string) string {
			switch m[1] {
			case "possible circular locking dependency", "possible recursive locking", "possible irq lock inversion dependency":
				return in("possible deadlock", f)
			}
			return in(m[1], f)
		},
		frame: "trace",
	},
	{
		name:   "lockdep",
		header: regexp.MustCompile(`^BUG: (MAX_LOCKDEP_\w+|MAX_STACK_TRACE_ENTRIES|MAX_LOCK_DEPTH) too low`),
		title:  func(m []string, f string) string { return "BUG: " + m[1] + " too low" },
		frame:  "trace",
	},
	{
		name:   "general protection fault",
		header: regexp.MustCompile(`^(?:Oops: )?general protection fault`),
		title:  func(m []string, f string) string { return in("general protection fault", f) },
		frame:  "rip",
	},
	{
		name:   "kernel BUG",
		header: regexp.MustCompile(`^kernel BUG at (\S+?)!?$`),
		title:  func(m []string, f string) string { return in("kernel BUG", f) },
		frame:  "rip",
	},
	{
		name:   "BUG",
		header: regexp.MustCompile(`^(?:watchdog: )?BUG: (.+)`),
		title:  func(m []string, f string) string { return in("BUG: "+bugKind(m[1]), f) },
		frame:  "rip",
	},
	{
		name:   "lockup",
		header: regexp.MustCompile(`Watchdog detected hard LOCKUP`),
		title:  func(m []string, f string) string { return in("hard lockup", f) },
		frame:  "rip",
	},
	{
		name:   "Oops",
		header: regexp.MustCompile(`^Oops: (?:Oops: )?(\w[\w ]*?)?:? ?[0-9a-f]{4} \[#\d+\]`),
		title: func(m []string, f string) string {
			if m[1] == "" || m[1] == "Oops" {
				return in("Oops", f)
			}
			return in("Oops: "+m[1], f)
		},
		frame: "rip",
	},
	{
		name:   "WARNING",
		header: regexp.MustCompile(`^WARNING: CPU: \d+ PID: \d+ at (\S+) (\S+)`),
		title:  func(m []string, f string) string { return in("WARNING", f) },
		frame:  "header", frameRe: regexp.MustCompile(`^WARNING: CPU: \d+ PID: \d+ at \S+ (\S+)`),
	},
	{
		name:   "WARNING",
		header: regexp.MustCompile(`^WARNING: (.+)`),
		title:  func(m []string, f string) string { return in("WARNING: "+bugKind(m[1]), f) },
		frame:  "trace",
	},
	{
		name:   "Kernel panic",
		header: regexp.MustCompile(`^Kernel panic - not syncing: (.*)`),
		title:  func(m []string, f string) string { return "kernel panic: " + strings.TrimSpace(m[1]) },
		frame:  "trace",
	},
	{
		name:   "hung task",
		header: regexp.MustCompile(`^INFO: task \S+ blocked for more than`),
		title:  func(m []string, f string) string { return in("INFO: task hung", f) },
		frame:  "trace",
	},
	{
		name:   "RCU stall",
		header: regexp.MustCompile(`^(?:rcu: )?INFO: rcu_\w+ (?:self-)?detected (?:expedited )?stalls?`),
		title:  func(m []string, f string) string { return in("INFO: rcu detected stall", f) },
		frame:  "trace",
	},
	{
		name:   "Call Trace",
		header: regexp.MustCompile(`^Call Trace:`),
		title:  func(m []string, f string) string { return in("call trace", f) },
		frame:  "trace",
	},
}

// bugKind cuts the variable tail off a BUG:/WARNING: message: the address,
// process, location or duration that follows the kind of bug.
func bugKind(s string) string {
	cut := len(s)
	for _, sep := range []string{":", " - ", ", ", " at ", " in process", " for address", "!", " (", " ["} {
		if i := strings.Index(s, sep); i > 0 && i < cut {
			cut = i
		}
	}
	return strings.TrimSpace(s[:cut])
}

var (
	// printk prefix: "[    1.234567]" and, with PRINTK_CALLER, "[    T1]".
	timestampRe = regexp.MustCompile(`\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])?\s?`)
	ripRe       = regexp.MustCompile(`^RIP: [0-9a-f]{4}:([A-Za-z_][\w.$]*\+0x[0-9a-f]+/0x[0-9a-f]+)`)
	frameRe     = regexp.MustCompile(`^\s*(\? )?([A-Za-z_][\w.$]*)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[\S+\])?\s*$`)
	endRe       = regexp.MustCompile(`^---\[ end (?:trace|Kernel panic)`)
	hexRe       = regexp.MustCompile(`0x[0-9a-fA-F]+|\b[0-9a-f]{8,}\b`)
	numRe       = regexp.MustCompile(`\d+`)
	bpfTagRe    = regexp.MustCompile(`^bpf_prog_[0-9a-f]{16}_`)
	suffixRe    = regexp.MustCompile(`(\.(isra|constprop|part|cold|llvm|lto_priv)(\.\d+)?)+$`)
)

// splitPrintk returns the kernel message in a console line and whether the
// line carried a printk timestamp. Output from user space (the agent, a
// shell) can precede a kernel message on the same line.
func splitPrintk(line string) (msg string, kernel bool) {
	line = strings.TrimRight(line, "\r")
	if loc := timestampRe.FindStringIndex(line); loc != nil {
		return line[loc[1]:], true
	}
	return line, false
}

// funcName strips the offset, module and compiler suffixes from a symbol.
func funcName(sym string) string {
	if i := strings.IndexByte(sym, '+'); i >= 0 {
		sym = sym[:i]
	}
	sym = suffixRe.ReplaceAllString(sym, "")
	// A BPF program's tag is a hash of its instructions.
	return bpfTagRe.ReplaceAllString(sym, "bpf_prog_")
}

// normalise strips what differs between two runs of the same crash:
// addresses, offsets, numbers.
func normalise(title string) string {
	title = hexRe.ReplaceAllString(title, "ADDR")
	title = numRe.ReplaceAllString(title, "NUM")
	return strings.Join(strings.Fields(title), " ")
}

// helper frames are the reporting machinery itself, never the culprit.
var helperExact = map[string]bool{
	"panic": true, "vpanic": true, "nmi_panic": true, "do_exit": true, "make_task_dead": true,
	"oops_end": true, "die": true, "die_addr": true, "__die": true, "do_trap": true,
	"do_error_trap": true, "report_bug": true, "handle_bug": true, "exc_invalid_op": true,
	"asm_exc_invalid_op": true, "exc_general_protection": true, "asm_exc_general_protection": true,
	"page_fault_oops": true, "kernelmode_fixup_or_oops": true, "__bad_area_nosemaphore": true,
	"bad_area_nosemaphore": true, "do_user_addr_fault": true, "exc_page_fault": true,
	"asm_exc_page_fault": true, "do_kern_addr_fault": true, "spurious_kernel_fault": true,
	"schedule": true, "__schedule": true, "schedule_timeout": true, "schedule_preempt_disabled": true,
	"io_schedule": true, "io_schedule_timeout": true, "wait_for_completion": true,
	"wait_for_common": true, "__wait_for_common": true, "do_wait_for_common": true,
	"lock_acquire": true, "__lock_acquire": true, "lock_release": true, "validate_chain": true,
	"check_prev_add": true, "check_prevs_add": true, "check_noncircular": true, "check_deadlock": true,
	"mark_lock": true, "___might_sleep": true, "__might_sleep": true, "__might_resched": true,
	"__might_fault": true, "__schedule_bug": true, "ubsan_epilogue": true,
	"nmi_cpu_backtrace": true, "nmi_trigger_cpumask_backtrace": true,
	"arch_trigger_cpumask_backtrace": true, "update_process_times": true,
	"__sysvec_apic_timer_interrupt": true, "sysvec_apic_timer_interrupt": true,
	"asm_sysvec_apic_timer_interrupt": true, "ret_from_fork": true, "ret_from_fork_asm": true,
	"check_memory_region": true, "kasan_check_range": true,
}

var helperPrefix = []string{
	"dump_stack", "show_", "__show_", "print_", "__print_", "warn_", "__warn", "kasan_", "__kasan_",
	"__asan_", "__ubsan_", "lockdep_", "debug_lockdep", "_raw_spin_lock", "_raw_read_lock",
	"_raw_write_lock", "do_raw_spin_lock", "mutex_lock", "__mutex_lock", "down_", "__down",
	"rwsem_", "__rwsem_", "rcu_", "hrtimer_", "__hrtimer_", "tick_",
	"irq_exit", "__irq_exit", "watchdog_timer_fn",
}

func isHelper(fn string) bool {
	if helperExact[fn] {
		return true
	}
	for _, p := range helperPrefix {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// framePlaceholder stands for the frame while the rest of the title is
// normalised: function names keep their digits.
const framePlaceholder = "FRAME"

// maxReport bounds a report's excerpt (and how long the watchdog waits for
// the rest of a report that has no end marker).
const maxReport = 60

// parseAt builds the report whose header is msgs[0]; msgs are kernel
// messages (timestamps stripped), raw the matching console lines.
func parseAt(f *family, m []string, msgs, raw []string) *Report {
	n := len(msgs)
	if n > maxReport {
		n = maxReport
	}
	end := n
	for i := 1; i < n; i++ {
		if endRe.MatchString(msgs[i]) {
			end = i + 1
			break
		}
	}
	frame := ""
	switch f.frame {
	case "header":
		if fm := f.frameRe.FindStringSubmatch(msgs[0]); fm != nil && !isHelper(funcName(fm[1])) {
			frame = funcName(fm[1])
		}
	case "rip":
		for _, l := range msgs[1:end] {
			if rm := ripRe.FindStringSubmatch(l); rm != nil && !isHelper(funcName(rm[1])) {
				frame = funcName(rm[1])
				break
			}
		}
	}
	if frame == "" {
		frame = traceFrame(msgs[:end])
	}
	title := normalise(f.title(m, framePlaceholder))
	if frame == "" {
		title = strings.Replace(title, " in "+framePlaceholder, "", 1)
	}
	return &Report{
		Title:   strings.Replace(title, framePlaceholder, frame, 1),
		Frame:   frame,
		Excerpt: strings.Join(raw[:end], "\n"),
	}
}

// traceFrame is the first reliable Call Trace frame that is not part of
// the reporting machinery.
func traceFrame(msgs []string) string {
	inTrace := false
	for _, l := range msgs {
		if strings.HasPrefix(strings.TrimSpace(l), "Call Trace:") {
			inTrace = true
			continue
		}
		if !inTrace {
			continue
		}
		fm := frameRe.FindStringSubmatch(l)
		if fm == nil || fm[1] != "" { // "? " frames are stack garbage
			continue
		}
		if fn := funcName(fm[2]); !isHelper(fn) {
			return fn
		}
	}
	return ""
}

// Watchdog scans console lines for kernel crash reports as they arrive.
// It is not safe for concurrent use.
type Watchdog struct {
	msgs, raw  []string // lines from the report header on
	fam        *family
	match      []string
	kernelOnly bool // the kernel timestamps its messages: ignore unstamped lines
	// before are the last few kernel lines before a header: a WARN's
	// message sits between "cut here" and its header.
	before []string
}

const cutHere = "------------[ cut here ]------------"

// Feed adds one console line. It reports whether a crash report is
// complete (end marker seen, or maxReport lines long); Report then
// returns it.
func (w *Watchdog) Feed(line string) bool {
	msg, kernel := splitPrintk(line)
	if kernel {
		w.kernelOnly = true
	}
	if w.fam != nil {
		if len(w.msgs) >= maxReport {
			return true
		}
		w.msgs, w.raw = append(w.msgs, msg), append(w.raw, strings.TrimRight(line, "\r"))
		return endRe.MatchString(msg) || len(w.msgs) >= maxReport
	}
	if w.kernelOnly && !kernel {
		return false
	}
	raw := strings.TrimRight(line, "\r")
	for i := range families {
		if m := families[i].header.FindStringSubmatch(msg); m != nil {
			w.fam, w.match = &families[i], m
			w.msgs, w.raw = []string{msg}, []string{raw}
			return false
		}
	}
	if w.before = append(w.before, raw); len(w.before) > 3 {
		w.before = w.before[1:]
	}
	return false
}

// Pending reports whether a report header has been seen.
func (w *Watchdog) Pending() bool { return w.fam != nil }

// Report returns the crash report seen so far, or nil if there is none.
func (w *Watchdog) Report() *Report {
	if w.fam == nil {
		return nil
	}
	r := parseAt(w.fam, w.match, w.msgs, w.raw)
	// Keep what a "cut here" block printed before the header.
	for i, l := range w.before {
		if strings.HasSuffix(l, cutHere) {
			r.Excerpt = strings.Join(append(slices.Clone(w.before[i:]), r.Excerpt), "\n")
			break
		}
	}
	return r
}
