package supervisor

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestFlagsAndEnvironment(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    Limits
		wantErr string
	}{
		{name: "defaults", want: DefaultLimits},
		{name: "flags", args: []string{"--timeout", "5s", "--memory", "64MiB", "--max-output", "1KiB", "--max-code", "2KiB"},
			want: func() Limits {
				l := DefaultLimits
				l.Timeout, l.Memory, l.MaxOutput, l.MaxCode = 5*time.Second, 64<<20, 1<<10, 2<<10
				return l
			}()},
		{name: "environment", env: map[string]string{"CAPSULE_TIMEOUT": "2s", "CAPSULE_MEMORY": "32MiB"},
			want: func() Limits { l := DefaultLimits; l.Timeout, l.Memory = 2*time.Second, 32<<20; return l }()},
		{name: "flag beats environment", env: map[string]string{"CAPSULE_TIMEOUT": "2s"}, args: []string{"--timeout", "9s"},
			want: func() Limits { l := DefaultLimits; l.Timeout = 9 * time.Second; return l }()},
		{name: "files limits", args: []string{"--max-files-in", "1MiB", "--max-files-out-count", "3"},
			env: map[string]string{"CAPSULE_MAX_FILES_OUT": "2MiB", "CAPSULE_MAX_FILES_OUT_COUNT": "9"},
			want: func() Limits {
				l := DefaultLimits
				l.MaxFilesIn, l.MaxFilesOut, l.MaxFilesOutCount = 1<<20, 2<<20, 3
				return l
			}()},
		{name: "answer limit by flag", args: []string{"--max-answer", "4MiB"},
			want: func() Limits { l := DefaultLimits; l.MaxAnswer = 4 << 20; return l }()},
		{name: "answer limit by environment", env: map[string]string{"CAPSULE_MAX_ANSWER": "16MiB"},
			want: func() Limits { l := DefaultLimits; l.MaxAnswer = 16 << 20; return l }()},
		{name: "bad files count names its variable", env: map[string]string{"CAPSULE_MAX_FILES_OUT_COUNT": "-1"}, wantErr: "CAPSULE_MAX_FILES_OUT_COUNT"},
		{name: "scratch by flag, none by environment", args: []string{"--scratch", "4MiB"}, env: map[string]string{"CAPSULE_SCRATCH": "0"},
			want: func() Limits { l := DefaultLimits; l.Scratch = 4 << 20; return l }()},
		{name: "no scratch directory", env: map[string]string{"CAPSULE_SCRATCH": "0"},
			want: func() Limits { l := DefaultLimits; l.Scratch = 0; return l }()},
		{name: "bad scratch size names its variable", env: map[string]string{"CAPSULE_SCRATCH": "-1MiB"}, wantErr: "CAPSULE_SCRATCH"},
		{name: "bad environment names its variable", env: map[string]string{"CAPSULE_MEMORY": "lots"}, wantErr: "CAPSULE_MEMORY"},
		{name: "bad flag", args: []string{"--timeout", "-1s"}, wantErr: "invalid duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfig(t, tt.env, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Limits != tt.want {
				t.Fatalf("limits %+v, want %+v", cfg.Limits, tt.want)
			}
		})
	}
}

// parseConfig is the default configuration with the flags args and the
// environment variables env applied.
func parseConfig(t *testing.T, env map[string]string, args []string) (Config, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := DefaultConfig()
	e := NewEnvFlags(fs)
	cfg.RegisterFlags(e)
	return cfg, e.Parse(args)
}

func TestValidateMaxTimeout(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    time.Duration // MaxTimeout after Validate
		wantErr string
	}{
		{name: "default max", args: nil, want: DefaultLimits.MaxTimeout},
		{name: "default max follows a longer timeout", args: []string{"--timeout", "5m"}, want: 5 * time.Minute},
		{name: "given max below timeout is refused", args: []string{"--max-timeout", "3s", "--timeout", "30s"},
			wantErr: "max-timeout 3s is below timeout 30s"},
		{name: "given max below default timeout is refused", args: []string{"--max-timeout", "3s"},
			wantErr: "max-timeout 3s is below timeout 30s"},
		{name: "given max equal to timeout", args: []string{"--max-timeout", "10s", "--timeout", "10s"}, want: 10 * time.Second},
		{name: "memory too small", args: []string{"--memory", "1"}, wantErr: "memory limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cfg := DefaultConfig()
			e := NewEnvFlags(fs)
			cfg.RegisterFlags(e)
			if err := e.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := cfg.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrConfig) {
					t.Fatalf("err = %v, want ErrConfig with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Limits.MaxTimeout != tt.want {
				t.Fatalf("max timeout %s, want %s", cfg.Limits.MaxTimeout, tt.want)
			}
		})
	}
}

// TestValidateMaxAnswer: an answer limit too small for an answer's text
// is refused at start, naming the flag and the least it may be.
func TestValidateMaxAnswer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.MaxAnswer = 1 << 10
	err := cfg.Validate()
	if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "max-answer 1KiB is too small") || !strings.Contains(err.Error(), "64KiB") {
		t.Errorf("validate: %v", err)
	}
	cfg.Limits.MaxAnswer = MinAnswer
	if err := cfg.Validate(); err != nil {
		t.Errorf("validate at the least: %v", err)
	}
}
