package supervisor

import (
	"strings"
	"testing"
	"time"

	"capsule/runtimes"
)

// TestLimitNote checks that every limit an answer can name gets one line
// in the text that says which limit, its configured size, and what changes
// it, for serve and for exec.
func TestLimitNote(t *testing.T) {
	cfg := DefaultConfig(testLanguages)
	cfg.Limits.Memory = 300 << 20
	cfg.Limits.Scratch = 48 << 20
	cfg.Limits.MaxOutput = 3 << 20
	cfg.Limits.MaxCode = 5000
	cfg.Limits.MaxFilesIn = 7 << 20
	cfg.Limits.MaxFilesOut = 6 << 20
	cfg.Limits.MaxFilesOutCount = 1
	tests := []struct {
		limit   string
		lang    string
		timeout time.Duration
		exec    bool
		want    []string // in the line, in this order
	}{
		{runtimes.LimitTimeout, runtimes.Python, 30 * time.Second, false, []string{"timeout:", "30s", "timeout_seconds", "2m0s", "--max-timeout", "CAPSULE_MAX_TIMEOUT"}},
		{runtimes.LimitTimeout, runtimes.Python, 2 * time.Minute, false, []string{"timeout:", "2m0s", "the most", "--max-timeout"}},
		{runtimes.LimitTimeout, runtimes.Python, 30 * time.Second, true, []string{"timeout:", "30s", "--timeout (CAPSULE_TIMEOUT)"}},
		{runtimes.LimitMemory, runtimes.Python, 0, false, []string{"memory:", "300MiB", "the server's --memory (CAPSULE_MEMORY)"}},
		{runtimes.LimitMemory, runtimes.JavaScript, 0, true, []string{"memory:", "300MiB", "--memory (CAPSULE_MEMORY)"}},
		{runtimes.LimitOutput, runtimes.Python, 0, false, []string{"output:", "3MiB", "--max-output (CAPSULE_MAX_OUTPUT)", "/tmp/outputs/"}},
		{runtimes.LimitOutput, runtimes.JavaScript, 0, false, []string{"output:", "3MiB", "--max-output", "global outputs"}},
		{runtimes.LimitCodeSize, runtimes.Python, 0, false, []string{"code_size:", "5000 characters", "--max-code (CAPSULE_MAX_CODE)"}},
		{runtimes.LimitScratch, runtimes.Python, 0, false, []string{"scratch:", "/tmp", "48MiB", "--scratch (CAPSULE_SCRATCH)"}},
		{runtimes.LimitFilesIn, runtimes.Python, 0, false, []string{"files_in:", "7MiB", "256 files", "--max-files-in (CAPSULE_MAX_FILES_IN)", "--max-files-in-count (CAPSULE_MAX_FILES_IN_COUNT)"}},
		{runtimes.LimitFilesOut, runtimes.Python, 0, false, []string{"files_out:", "6MiB and 1 file,", "--max-files-out (CAPSULE_MAX_FILES_OUT)", "--max-files-out-count (CAPSULE_MAX_FILES_OUT_COUNT)"}},
		{runtimes.LimitShutdown, runtimes.Python, 0, false, []string{"shutdown:", "--shutdown-grace (CAPSULE_SHUTDOWN_GRACE)"}},
		{"future_limit", runtimes.Python, 0, false, []string{"future_limit:", "future_limit: over 9 units"}},
	}
	for _, tt := range tests {
		c := cfg
		c.Exec = tt.exec
		s := &Supervisor{cfg: c}
		a := limitAnswer(tt.limit, "SomeError", tt.limit+": over 9 units")
		note := s.limitNote(a, tt.lang, tt.timeout)
		if strings.Contains(note, "\n") || !strings.HasPrefix(note, "[limit] "+tt.limit+": ") {
			t.Errorf("%s: note %q is not one line that starts with [limit] %s:", tt.limit, note, tt.limit)
		}
		if tt.exec && strings.Contains(note, "server") {
			t.Errorf("%s (exec): note %q speaks of a server", tt.limit, note)
		}
		rest := note
		for _, w := range tt.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s (%s, exec %v): note %q lacks %q (in order)", tt.limit, tt.lang, tt.exec, note, w)
				break
			}
			rest = rest[i+len(w):]
		}
		a.limitNote = note
		if text := a.Text(); !strings.HasSuffix(text, "\n"+note) {
			t.Errorf("%s: the text does not end with the note:\n%s", tt.limit, text)
		}
	}
	if note := (&Supervisor{cfg: cfg}).limitNote(&Answer{}, runtimes.Python, time.Second); note != "" {
		t.Errorf("an answer without a limit got the note %q", note)
	}
}

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 files"}, {1, "1 file"}, {2, "2 files"}, {1024, "1024 files"}} {
		if got := Count(tt.n, "file", "files"); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
