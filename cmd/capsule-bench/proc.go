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

// pssStatus is a process's proportional set size by kind, in KiB, from
// /proc/PID/smaps_rollup: anonymous memory is the process's own; file and
// shmem pages (the binary, the sealed snapshot memfd) are shared with
// every other worker and divided among them.
type pssStatus struct {
	Anon, File, Shmem int64
}

// readPSS reads pid's smaps_rollup.
func readPSS(pid int) (pssStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return pssStatus{}, err
	}
	var p pssStatus
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "Pss_Anon":
			dst = &p.Anon
		case "Pss_File":
			dst = &p.File
		case "Pss_Shmem":
			dst = &p.Shmem
		default:
			continue
		}
		if f := strings.Fields(v); len(f) > 0 {
			*dst, _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return p, nil
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

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, 100 on
// every Linux architecture's /proc interface.
const userHZ = 100

// cpuTimes is a process's CPU time: its own (user+system) and that of its
// children it has reaped.
type cpuTimes struct {
	self, children time.Duration
}

// readCPU reads pid's CPU times from /proc/PID/stat.
func readCPU(pid int) (cpuTimes, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuTimes{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return cpuTimes{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	// After the command name: state(3) ppid ... utime(14) stime cutime cstime(17).
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return cpuTimes{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var t [4]int64
	for j := range t {
		if t[j], err = strconv.ParseInt(f[11+j], 10, 64); err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	tick := time.Second / userHZ
	return cpuTimes{
		self:     time.Duration(t[0]+t[1]) * tick,
		children: time.Duration(t[2]+t[3]) * tick,
	}, nil
}

// loadAverage is the first line of /proc/loadavg's one-, five- and
// fifteen-minute load averages, or "" if unreadable.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// waitIdle waits up to timeout until pid has used no CPU for a while,
// which for a pooled worker means it is ready and blocked waiting for its
// request. It reports whether it saw that.
func waitIdle(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	last, err := readCPU(pid)
	if err != nil {
		return false
	}
	still := 0
	for time.Now().Before(deadline) {
		time.Sleep(150 * time.Millisecond)
		now, err := readCPU(pid)
		if err != nil {
			return false
		}
		if now.self == last.self {
			if still++; still >= 3 {
				return true
			}
		} else {
			still = 0
		}
		last = now
	}
	return false
}
