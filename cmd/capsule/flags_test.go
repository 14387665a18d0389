package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"capsule/supervisor"
)

func TestFlagsAndEnvironment(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    supervisor.Limits
		wantErr string
	}{
		{name: "defaults", want: supervisor.DefaultLimits},
		{name: "flags", args: []string{"--timeout", "5s", "--memory", "64MiB", "--max-output", "1KiB", "--max-code", "2KiB"},
			want: func() supervisor.Limits {
				l := supervisor.DefaultLimits
				l.Timeout, l.Memory, l.MaxOutput, l.MaxCode = 5*time.Second, 64<<20, 1<<10, 2<<10
				return l
			}()},
		{name: "environment", env: map[string]string{"CAPSULE_TIMEOUT": "2s", "CAPSULE_MEMORY": "32MiB"},
			want: func() supervisor.Limits {
				l := supervisor.DefaultLimits
				l.Timeout, l.Memory = 2*time.Second, 32<<20
				return l
			}()},
		{name: "flag beats environment", env: map[string]string{"CAPSULE_TIMEOUT": "2s"}, args: []string{"--timeout", "9s"},
			want: func() supervisor.Limits { l := supervisor.DefaultLimits; l.Timeout = 9 * time.Second; return l }()},
		{name: "files limits", args: []string{"--max-files-in", "1MiB", "--max-files-out-count", "3"},
			env: map[string]string{"CAPSULE_MAX_FILES_OUT": "2MiB", "CAPSULE_MAX_FILES_OUT_COUNT": "9"},
			want: func() supervisor.Limits {
				l := supervisor.DefaultLimits
				l.MaxFilesIn, l.MaxFilesOut, l.MaxFilesOutCount = 1<<20, 2<<20, 3
				return l
			}()},
		{name: "answer limit by flag", args: []string{"--max-answer", "4MiB"},
			want: func() supervisor.Limits { l := supervisor.DefaultLimits; l.MaxAnswer = 4 << 20; return l }()},
		{name: "answer limit by environment", env: map[string]string{"CAPSULE_MAX_ANSWER": "16MiB"},
			want: func() supervisor.Limits { l := supervisor.DefaultLimits; l.MaxAnswer = 16 << 20; return l }()},
		{name: "bad files count names its variable", env: map[string]string{"CAPSULE_MAX_FILES_OUT_COUNT": "-1"}, wantErr: "CAPSULE_MAX_FILES_OUT_COUNT"},
		{name: "scratch by flag, none by environment", args: []string{"--scratch", "4MiB"}, env: map[string]string{"CAPSULE_SCRATCH": "0"},
			want: func() supervisor.Limits { l := supervisor.DefaultLimits; l.Scratch = 4 << 20; return l }()},
		{name: "no scratch directory", env: map[string]string{"CAPSULE_SCRATCH": "0"},
			want: func() supervisor.Limits { l := supervisor.DefaultLimits; l.Scratch = 0; return l }()},
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
func parseConfig(t *testing.T, env map[string]string, args []string) (supervisor.Config, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := supervisor.DefaultConfig(languages())
	e := NewEnvFlags(fs)
	registerConfigFlags(e, &cfg)
	return cfg, e.Parse(args)
}

func TestValidateMaxTimeout(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    time.Duration // MaxTimeout after Validate
		wantErr string
	}{
		{name: "default max", args: nil, want: supervisor.DefaultLimits.MaxTimeout},
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
			cfg, err := parseConfig(t, nil, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, supervisor.ErrConfig) {
					t.Fatalf("err = %v, want supervisor.ErrConfig with %q", err, tt.wantErr)
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

// TestPythonVariantsFlag: --python-variants takes known names, comma-separated, or none.
func TestPythonVariantsFlag(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		want    []string
		wantErr string
	}{
		{name: "default: all", want: []string{"numpy", "sympy", "documents", "networkx"}},
		{name: "some", args: []string{"--python-variants", "networkx, sympy,networkx"}, want: []string{"networkx", "sympy"}},
		{name: "none", env: map[string]string{"CAPSULE_PYTHON_VARIANTS": "none"}, want: nil},
		{name: "empty is none", args: []string{"--python-variants="}, want: nil},
		{name: "unknown", args: []string{"--python-variants", "pandas"}, wantErr: `unknown Python snapshot variant "pandas": the variants are numpy, sympy, documents, networkx`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig(t, c.env, c.args)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(cfg.PythonVariants, c.want) {
				t.Fatalf("variants %q, %v; want %q", cfg.PythonVariants, err, c.want)
			}
		})
	}
}
