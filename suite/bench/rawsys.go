package bench

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The traffic threads are real-time (SCHED_FIFO) and make their per-packet
// syscalls raw, in loops that call nothing the Go runtime can preempt.
// Through the runtime's syscall entry and exit, Go 1.26's sysmon takes
// the scan bit of every goroutine in a syscall on each pass; a traffic
// thread that returned from read or write meanwhile spun until sysmon
// gave it back, and sysmon, an ordinary thread, could not run until the
// kernel's real-time throttling (0.95 s of each second) stopped the
// spinner: windows lost 15–90 % of a second's packets. Raw, the runtime
// sees each traffic goroutine as running for the traffic's whole life: it
// holds its P (GOMAXPROCS is raised for that), no preemption request can
// land (every call below is nosplit), and the agent runs with async
// preemption off (cmd/kci-guest), so no signal interrupts the syscalls.

//go:nosplit
func rawRead(fd int, p []byte) (int, unix.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), e
}

//go:nosplit
func rawWrite(fd int, p []byte) unix.Errno {
	_, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return e
}

// rawMono is CLOCK_MONOTONIC, the clock the grid and the tick are on.
//
//go:nosplit
func rawMono() time.Duration {
	var ts unix.Timespec
	_, _, _ = unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ts)), 0) // cannot fail for this clock
	return time.Duration(ts.Sec)*time.Second + time.Duration(ts.Nsec)
}

// rawSleepUntil sleeps the calling thread itself (not a Go runtime
// timer, which wakes another thread first) to the absolute time at.
//
//go:nosplit
func rawSleepUntil(at time.Duration) {
	ts := unix.Timespec{Sec: int64(at / time.Second), Nsec: int64(at % time.Second)}
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e != unix.EINTR {
			return
		}
	}
}
