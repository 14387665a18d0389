// Package scarcity keeps the server standing when the host runs short of
// processes or memory: the Go runtime dies ("failed to create new OS
// thread") when it cannot make a thread it needs, so the server makes the
// threads it will need while it still can and stops holding one per
// worker; and a worker that cannot be started becomes an answer that
// names the cause and says to try again.
package scarcity

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Error is a worker that could not be started for want of a host
// resource. The call is answered as retryable.
type Error struct {
	// Cause names the resource, in words.
	Cause string
	// Err is what failed.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%v); try again shortly", e.Cause, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Classify returns err as an *Error when it says the host is short of
// processes or memory: an errno from clone (EAGAIN: RLIMIT_NPROC, pid_max
// or threads-max; ENOMEM: memory, or a pid namespace whose init is gone;
// ENOSPC: the pid namespace or pid cgroup is full), or a worker's Go
// runtime that could not make its threads (its stderr). Otherwise it
// returns err.
func Classify(err error, stderr string) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno) && errno == syscall.EAGAIN,
		strings.Contains(stderr, "failed to create new OS thread"),
		strings.Contains(stderr, "pthread_create failed"):
		return &Error{Cause: "the host's process limit is reached (" + processLimit() + ")", Err: err}
	case errors.As(err, &errno) && errno == syscall.ENOMEM:
		return &Error{Cause: "the host is out of memory for a new process (or the pid namespace is gone)", Err: err}
	case errors.As(err, &errno) && errno == syscall.ENOSPC:
		return &Error{Cause: "the process limit of the pid namespace or pids cgroup is reached", Err: err}
	}
	return err
}

// processLimit describes the server's RLIMIT_NPROC.
func processLimit() string {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) != nil || rl.Cur == unix.RLIM_INFINITY {
		return "RLIMIT_NPROC unlimited: pid_max, threads-max or a pids cgroup"
	}
	return fmt.Sprintf("RLIMIT_NPROC %d for uid %d, or pid_max, threads-max or a pids cgroup", rl.Cur, os.Getuid())
}

// Reserve is how many OS threads the server makes at start beyond one per
// CPU: enough for the spawner's thread, the signal and timer threads, and
// the blocking system calls (reading /proc, writing cgroup files,
// starting a worker) that run at once. Waiting for a worker no longer
// holds one (WaitExit).
const Reserve = 16

var reserveOnce sync.Once

// ReserveThreads makes the Go runtime create its threads now, while the
// process limit allows: n goroutines each lock a thread of their own until
// all have one, then let go. The runtime keeps idle threads and hands them
// out before making new ones, so the server needs no new thread later
// unless more than n system calls block at once. It runs once per process.
func ReserveThreads(n int) {
	reserveOnce.Do(func() {
		var started, release sync.WaitGroup
		release.Add(1)
		for range n {
			started.Add(1)
			go func() {
				runtime.LockOSThread()
				started.Done()
				release.Wait()
				runtime.UnlockOSThread()
			}()
		}
		started.Wait()
		release.Done()
	})
}

// Threads is how many threads the server wants: one per CPU the runtime
// uses plus Reserve.
func Threads() int { return runtime.GOMAXPROCS(0) + Reserve }

// CheckLimit reports an error when RLIMIT_NPROC cannot even hold the
// server's threads and a few workers: such a server could answer nothing.
// workerThreads is what one worker takes.
func CheckLimit(workerThreads int) error {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || os.Geteuid() == 0 {
		return nil // root is not held to it
	}
	if need := uint64(Threads() + 2*workerThreads); rl.Cur < need {
		return fmt.Errorf("RLIMIT_NPROC is %d: the server needs %d threads and each worker about %d; raise it to at least %d (ulimit -u)",
			rl.Cur, Threads(), workerThreads, need)
	}
	return nil
}

// WaitExit returns once the process pid has exited, without holding an OS
// thread while it waits: the process's pidfd is pollable, so the wait is
// the runtime's poller's. The process is not reaped. Where pidfds are not
// available it returns at once, and the caller's wait blocks a thread as
// before.
func WaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
}
