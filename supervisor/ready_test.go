package supervisor

import "testing"

func TestReady(t *testing.T) {
	warm, cold := make(chan struct{}), make(chan struct{})
	close(warm)
	cases := []struct {
		name     string
		pools    map[string]*pool
		draining bool
		want     bool
	}{
		{"no pools", nil, false, true},
		{"all warm", map[string]*pool{"a": {warm: warm}, "b": {warm: warm}}, false, true},
		{"one cold", map[string]*pool{"a": {warm: warm}, "b": {warm: cold}}, false, false},
		{"draining", map[string]*pool{"a": {warm: warm}}, true, false},
	}
	for _, c := range cases {
		s := &Supervisor{pools: c.pools, draining: c.draining}
		if got := s.Ready(); got != c.want {
			t.Errorf("%s: Ready() = %v, want %v", c.name, got, c.want)
		}
	}
}
