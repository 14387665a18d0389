package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// loggedVariant is the snapshot variant the server's log says the call of
// code started from ("" for the plain snapshot). The log line is written
// before the answer, but reaches the test through a pipe: it is waited for.
func loggedVariant(t *testing.T, s *testServer, code string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(code))
	line := regexp.MustCompile(`execution: [^\n]*code_sha256=` + hex.EncodeToString(sum[:]) + `[^\n]*`)
	variant := regexp.MustCompile(` variant=([a-z_]+)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if l := line.FindString(s.stderr.String()); l != "" {
			if m := variant.FindStringSubmatch(l); m != nil {
				return m[1]
			}
			return ""
		}
	}
	t.Fatalf("no log line for the call of %q", code)
	return ""
}

// callPython makes a Python call that must answer want, and returns the
// variant it started from.
func callPython(t *testing.T, s *testServer, code, want string) string {
	t.Helper()
	res, st := s.call(t, "execute_python", code)
	check(t, res, st, expectation{result: want})
	return loggedVariant(t, s, code)
}

// awaitVariant calls code (made distinct by a comment) until a call starts
// from variant: until the variant's snapshot is made, its calls start from
// the plain one, and answer the same.
func awaitVariant(t *testing.T, s *testServer, variant, code, want string) {
	t.Helper()
	for i := 0; ; i++ {
		c := fmt.Sprintf("%s  # %d", code, i)
		got := callPython(t, s, c, want)
		if got == variant {
			return
		}
		if got != "" {
			t.Fatalf("the call started from variant %q, want %q or the plain snapshot", got, variant)
		}
		if i == 300 {
			t.Fatalf("no call started from variant %s after %d calls", variant, i)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// drawsAnew makes two calls of draw (made distinct by a comment), which must
// start from variant and draw other random numbers in the second call:
// what a variant's snapshot imported is seeded anew in every call.
func drawsAnew(t *testing.T, s *testServer, variant, draw string) {
	t.Helper()
	var draws []string
	for i := range 2 {
		code := fmt.Sprintf("%s  # %d", draw, i)
		_, st := s.call(t, "execute_python", code)
		if v := loggedVariant(t, s, code); v != variant || st.Error != nil {
			t.Fatalf("draw %d: variant %q, error %+v", i, v, st.Error)
		}
		draws = append(draws, string(st.Result))
	}
	if draws[0] == draws[1] {
		t.Errorf("two calls from the %s variant drew the same numbers %s", variant, draws[0])
	}
}

// TestSnapshotVariants: calls that import sympy or networkx start from
// their variants once these are made, others from the plain snapshot; a
// wrong guess answers the same; calls from one variant do not share random
// numbers; a variant's snapshot is kept in the cache beside the plain one,
// sharing its compiled image, and a tampered one is made again.
func TestSnapshotVariants(t *testing.T) {
	home := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + home}
	const (
		sympyCode    = "import sympy\nx = sympy.Symbol('x')\nstr(sympy.expand((x + 1)**3))"
		sympyResult  = `"x**3 + 3*x**2 + 3*x + 1"`
		networkxCode = "import networkx as nx\nnx.shortest_path(nx.path_graph(4), 0, 3)"
	)
	s := startServerEnv(t, env, "--log-level", "debug")
	awaitVariant(t, s, "sympy", sympyCode, sympyResult)
	awaitVariant(t, s, "networkx", networkxCode, "[0,1,2,3]")
	cases := []struct {
		name, code, result, variant string
	}{
		{"sympy", sympyCode + "  # again", sympyResult, "sympy"},
		{"mpmath", "from mpmath import mp, mpf\nmp.dps = 20\nstr(mpf(1) / 3)", `"0.33333333333333333333"`, "sympy"},
		{"networkx", "import networkx\nnetworkx.__version__", `"2.8.8"`, "networkx"},
		{"the standard library", "import json, sys\njson.dumps(['sympy' in sys.modules, 'networkx' in sys.modules])", `"[false, false]"`, ""},
		{"a wrong guess", "if False:\n    import sympy\nimport json, sys\njson.dumps([sorted({'b': 1, 'a': 2}), 'sympy' in sys.modules])",
			`"[[\"a\", \"b\"], true]"`, "sympy"},
		{"an error on a variant", "import networkx as nx\nnx.shortest_path(nx.Graph([(1, 2)]), 1, 3)", "", "networkx"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, st := s.call(t, "execute_python", c.code)
			if c.result == "" {
				check(t, res, st, expectation{isError: true, errType: "networkx.exception.NodeNotFound", errContains: "target 3 is not in G"})
			} else {
				check(t, res, st, expectation{result: c.result})
			}
			if got := loggedVariant(t, s, c.code); got != c.variant {
				t.Errorf("started from variant %q, want %q", got, c.variant)
			}
		})
	}
	drawsAnew(t, s, "sympy", "from sympy.core.random import rng\nimport random\n[rng.random(), random.random()]")
	s.c.Close()
	s.cmd.Wait()

	dir := filepath.Dir(snapshotFiles(t, home)[0])
	glob := func(pattern string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		return m
	}
	if got := glob("snapshot-python-*.img"); len(got) != 2 {
		t.Fatalf("variant snapshots %v, want sympy's and networkx's", got)
	}
	if got := glob("code-python*.img"); len(got) != 1 {
		t.Fatalf("compiled images %v, want the plain snapshot's only, which the variants share", got)
	}

	// Tampered with: the variant is refused and made again, alone.
	img := glob("snapshot-python-sympy.*.img")[0]
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0x5a, 0xa5}, 64<<10+80000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s = startServerEnv(t, env, "--log-level", "debug")
	awaitVariant(t, s, "sympy", sympyCode, sympyResult)
	s.c.Close()
	s.cmd.Wait()
	log := s.stderr.String()
	if !strings.Contains(log, "interpreter snapshot refused") || !strings.Contains(log, "tampered") {
		t.Errorf("the tampered variant was not refused:\n%s", log)
	}
	if !regexp.MustCompile(`preparing a snapshot variant: [^\n]*language=python variant=sympy`).MatchString(log) ||
		strings.Contains(log, "preparing the runtime") {
		t.Errorf("the log does not say that the variant alone is being made again:\n%s", log)
	}
	// A variant loads the plain snapshot's compiled code: it neither
	// compiles nor takes the binary's, so it says nothing of either.
	if src := regexp.MustCompile(`code=(embedded|compiled)`).FindString(log); src != "" {
		t.Errorf("making the variant logged %s:\n%s", src, log)
	}
	made := regexp.MustCompile(`snapshot ready: snapshot=(\S+) key=\S+ made=true`).FindAllStringSubmatch(log, -1)
	if len(made) != 1 || made[0][1] != "python-sympy" {
		t.Errorf("made %v, want only the tampered variant made again:\n%s", made, log)
	}
}
