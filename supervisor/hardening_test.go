package supervisor

import (
	"slices"
	"strings"
	"testing"

	"capsule/supervisor/isolation"
)

// TestHardeningOwnsEveryProbe: every probe of how a worker is locked down
// and started belongs to exactly one layer of the table, so that a new
// probe cannot be left out of capsule doctor or of --require-hardening.
func TestHardeningOwnsEveryProbe(t *testing.T) {
	owner := map[string]string{}
	for _, def := range hardeningLayers {
		if def.needs == "" {
			t.Errorf("layer %s does not say what it needs", def.name)
		}
		for _, p := range def.probes {
			if o, dup := owner[p]; dup {
				t.Errorf("probe %s belongs to both %s and %s", p, o, def.name)
			}
			owner[p] = def.name
		}
	}
	for name := range hardeningProbes(isolation.Options{}) {
		if owner[name] == "" {
			t.Errorf("probe %s belongs to no hardening layer: add it to hardeningLayers", name)
		}
	}
	for p, layer := range owner {
		if _, probed := hardeningProbes(isolation.Options{})[p]; !probed {
			t.Errorf("layer %s names probe %s, which nothing probes", layer, p)
		}
	}
}

// TestHardeningReport: Hardening returns the table's layers in doctor's
// order, each active exactly when none of its probes failed.
func TestHardeningReport(t *testing.T) {
	layers := Hardening(isolation.Options{})
	var got []string
	for _, l := range layers {
		got = append(got, l.Name)
		if l.Active != (len(l.Missing) == 0) {
			t.Errorf("%s: active %v with missing probes %q", l.Name, l.Active, l.Missing)
		}
		if l.Reason == "" {
			t.Errorf("%s has no reason", l.Name)
		}
	}
	want := []string{"seccomp", "landlock", "no_new_privs", "namespaces", "worker_host_ids", "rlimits"}
	if !slices.Equal(got, want) {
		t.Errorf("layers %q, want %q (capsule doctor's order)", got, want)
	}
	probes := hardeningProbes(isolation.Options{})
	for _, l := range layers {
		for _, m := range l.Missing {
			if probes[m].Active {
				t.Errorf("%s: probe %s listed missing but active", l.Name, m)
			}
		}
	}
}

func TestMissingHardening(t *testing.T) {
	for _, tc := range []struct {
		name        string
		layers      []HardeningLayer
		wantMissing []string
		wantReasons []string
	}{
		{"all active", []HardeningLayer{{Name: "seccomp", Active: true, Reason: "ok"}}, nil, nil},
		{"one probe, named once",
			[]HardeningLayer{{Name: "landlock", Reason: "ENOSYS", Needs: "Linux 5.13", Missing: []string{"landlock"}}},
			[]string{"landlock"}, []string{"landlock: ENOSYS; needs Linux 5.13"}},
		{"several probes, each named",
			[]HardeningLayer{
				{Name: "seccomp", Active: true, Reason: "ok"},
				{Name: "namespaces", Reason: "user unavailable: EPERM", Needs: "user namespaces", Missing: []string{"user_ns", "net_ns"}},
			},
			[]string{"namespaces (user_ns, net_ns)"}, []string{"namespaces: user unavailable: EPERM; needs user namespaces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missing, reasons := missingHardening(tc.layers)
			if !slices.Equal(missing, tc.wantMissing) {
				t.Errorf("missing %q, want %q", missing, tc.wantMissing)
			}
			for _, r := range tc.wantReasons {
				if !strings.Contains(reasons, r) {
					t.Errorf("reasons %q lack %q", reasons, r)
				}
			}
			if len(tc.wantReasons) == 0 && reasons != "" {
				t.Errorf("reasons %q for no missing layer", reasons)
			}
		})
	}
}
