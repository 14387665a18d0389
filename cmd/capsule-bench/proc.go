package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// memStatus is a process's memory as /proc/PID/status reports it, in KiB.
type memStatus struct {
	RSS, HWM int64
}

// readMem reads VmRSS and VmHWM of pid.
func readMem(pid int) (memStatus, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, err
	}
	defer f.Close()
	var m memStatus
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if m.HWM == 0 {
		return m, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
	}
	return m, nil
}

// children lists pid's child processes, from /proc/PID/task/*/children
// when the kernel has it, else by scanning every process's parent.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	found := false
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		found = true
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	if found {
		return out
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: the fields
		// after the last ')' are state, then ppid.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if n, err := strconv.Atoi(filepath.Base(filepath.Dir(st))); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// waitChildren waits up to timeout for pid to have want children, and
// returns those it has then.
func waitChildren(pid, want int, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		c := children(pid)
		if len(c) >= want || time.Now().After(deadline) {
			return c
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// machine describes where the bench ran.
type machine struct {
	CPUs    int
	CPU     string
	Kernel  string
	GoBench string
}

func readMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), CPU: "unknown", Kernel: "unknown", GoBench: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}
