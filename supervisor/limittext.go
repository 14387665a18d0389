package supervisor

import (
	"fmt"
	"time"

	"capsule/runtimes"
)

// limitNote is the one line the text content gives a limit that was hit:
// which limit, its configured size, and what changes it (a call's
// argument, or the flag and variable). Many hosts show the model only the
// text, and a guest's bare traceback (MemoryError, ENOSPC) says neither
// that a limit was the cause nor which. Empty when the answer names no
// limit.
func (s *Supervisor) limitNote(a *Answer, lang string, timeout time.Duration) string {
	if a.Limit == nil {
		return ""
	}
	lim := s.cfg.Limits
	var note string
	switch *a.Limit {
	case runtimes.LimitTimeout:
		switch {
		case s.cfg.Exec:
			note = fmt.Sprintf("the code ran for its %s limit; %s raises it", timeout, s.flagRef("timeout", "CAPSULE_TIMEOUT"))
		case timeout < lim.MaxTimeout:
			note = fmt.Sprintf("the call ran for its %s limit; the timeout_seconds argument may ask for up to %s (%s caps it)",
				timeout, lim.MaxTimeout, s.flagRef("max-timeout", "CAPSULE_MAX_TIMEOUT"))
		default:
			note = fmt.Sprintf("the call ran for %s, the most a call may ask for (%s); do less per call",
				timeout, s.flagRef("max-timeout", "CAPSULE_MAX_TIMEOUT"))
		}
	case runtimes.LimitMemory:
		note = fmt.Sprintf("the code used all of its %s of memory; %s raises it, or use less per call",
			lim.Memory, s.flagRef("memory", "CAPSULE_MEMORY"))
	case runtimes.LimitOutput:
		l, _ := s.cfg.Languages.Lookup(lang)
		note = fmt.Sprintf("stdout and stderr keep %s each, and the result at most as much; %s raises it, or print less and %s",
			lim.MaxOutput, s.flagRef("max-output", "CAPSULE_MAX_OUTPUT"), l.Files.LargeOutput)
	case runtimes.LimitCodeSize:
		note = fmt.Sprintf("a call takes at most %d characters of code and %s of inputs as JSON; %s raises both, or pass data as files",
			int64(lim.MaxCode), lim.MaxCode, s.flagRef("max-code", "CAPSULE_MAX_CODE"))
	case runtimes.LimitScratch:
		note = fmt.Sprintf("Python's private /tmp (the working directory, with the files passed in and outputs/) holds at most %s; %s raises it, or keep less on disk",
			lim.Scratch, s.flagRef("scratch", "CAPSULE_SCRATCH"))
	case runtimes.LimitFilesIn:
		note = fmt.Sprintf("a call may pass in at most %s and %s; %s and %s raise them, or pass fewer files (an archive, or one file of many records)",
			lim.MaxFilesIn, Count(int64(lim.MaxFilesInCount), "file", "files"),
			s.flagRef("max-files-in", "CAPSULE_MAX_FILES_IN"), s.flagRef("max-files-in-count", "CAPSULE_MAX_FILES_IN_COUNT"))
	case runtimes.LimitFilesOut:
		note = fmt.Sprintf("a call returns at most %s and %s, the rest listed as truncated, not sent; %s and %s raise them, or return fewer, smaller files",
			lim.MaxFilesOut, Count(int64(lim.MaxFilesOutCount), "file", "files"),
			s.flagRef("max-files-out", "CAPSULE_MAX_FILES_OUT"), s.flagRef("max-files-out-count", "CAPSULE_MAX_FILES_OUT_COUNT"))
	case runtimes.LimitShutdown:
		note = fmt.Sprintf("the server shut down before the call finished; %s is how long running calls may go on; call again when it is back",
			s.flagRef("shutdown-grace", "CAPSULE_SHUTDOWN_GRACE"))
	default:
		// A limit without a note of its own still gets its line: its name
		// and the error's message, which states its size.
		if a.Error != nil {
			note = a.Error.Message
		}
	}
	return "[limit] " + *a.Limit + ": " + note
}

// flagRef names a flag and its variable as the one who can change it sees
// them: the server's operator, or the user of capsule exec.
func (s *Supervisor) flagRef(flag, env string) string {
	if s.cfg.Exec {
		return fmt.Sprintf("--%s (%s)", flag, env)
	}
	return fmt.Sprintf("the server's --%s (%s)", flag, env)
}

// Count writes n with its noun in the right number: "1 file", "2 files".
func Count(n int64, one, many string) string {
	if n == 1 || n == -1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
