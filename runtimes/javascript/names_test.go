package javascript

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

// glueImports returns the fields of the import object in the emscripten
// glue (`ua={b:...,c:...}`) with the source text of each.
func glueImports(t *testing.T, glue string) map[string]string {
	t.Helper()
	start := strings.Index(glue, "ua={b:")
	if start < 0 {
		t.Fatal("no import object ua={b:...} in the glue")
	}
	fields := map[string]string{}
	depth, field, begin := 0, "", 0
	src := glue[start+3:]
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"', '\'', '`':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '(', '[', '{':
			depth++
			if depth == 1 && c == '{' {
				begin = i + 1
			}
		case ')', ']', '}':
			if depth == 1 && field != "" {
				fields[field] = src[begin:i]
				return fields
			}
			depth--
		case ',':
			if depth == 1 {
				fields[field] = src[begin:i]
				begin, field = i+1, ""
			}
		case ':':
			if depth == 1 && field == "" {
				field = src[begin:i]
				begin = i + 1
			}
		}
	}
	t.Fatal("unterminated import object in the glue")
	return nil
}

// TestNameMapMatchesGlue checks our table against the package's own glue,
// emscripten-module.cjs, which fetch.sh keeps beside the module.
func TestNameMapMatchesGlue(t *testing.T) {
	b, err := os.ReadFile("dist/emscripten-module.cjs")
	if err != nil {
		t.Fatalf("%v (run runtimes/javascript/fetch.sh)", err)
	}
	glue := string(b)

	// Exports: the glue assigns c._REAL=b.MIN for each.
	exported := map[string]string{}
	for _, m := range regexp.MustCompile(`c\._(\w+)=b\.([\w$]+)[;}]`).FindAllStringSubmatch(glue, -1) {
		exported[m[1]] = m[2]
	}
	for _, n := range exportNames {
		if n.real == expCallCtors.real {
			// Called, not assigned: the glue runs Z.v() once at start.
			if !strings.Contains(glue, "Z."+n.min+"()") {
				t.Errorf("%s: the glue does not call Z.%s()", n.real, n.min)
			}
			continue
		}
		if got, ok := exported[n.real]; !ok || got != n.min {
			t.Errorf("export %s: glue maps it to %q, table to %q", n.real, got, n.min)
		}
	}

	// Imports: the glue's import object has exactly our fields (plus "a",
	// the memory). Fields with the same signature are told apart by what
	// their body does.
	fields := glueImports(t, glue)
	if _, ok := fields["a"]; !ok {
		t.Error(`glue imports no memory as "a"`)
	}
	delete(fields, "a")
	if len(fields) != len(importNames) {
		t.Errorf("glue has %d function imports, table %d", len(fields), len(importNames))
	}
	fingerprints := map[string]string{
		impAssertFail.real:       "Assertion failed",
		impFdWrite.real:          "J[e>>2]=f",
		impFdClose.real:          "52",
		impEnvironGet.real:       "oa()",
		impEnvironSizesGet.real:  "oa()",
		impNormalizeModule.real:  "callbacks.normalizeModule",
		impLoadModuleSource.real: "callbacks.loadModuleSource",
		impShouldInterrupt.real:  "callbacks.shouldInterrupt",
		impSetitimer.real:        "setTimeout",
		impResizeHeap.real:       "q.grow",
		impKeepaliveClear.real:   "S=0",
		impLocaltime.real:        "getSeconds",
		impTzset.real:            "getTimezoneOffset",
		impFdSeek.real:           "return 70",
		impDateNow.real:          "Date.now()",
		impClockTimeGet.real:     "performance.now()",
		impAbort.real:            `N("")`,
		impProcExit.real:         "ma",
		impCallFunction.real:     "callbacks.callFunction",
		impFreeHostRef.real:      "callbacks.freeHostRef",
	}
	for _, n := range importNames {
		body, ok := fields[n.min]
		if !ok {
			t.Errorf("import %s: field %q not in the glue", n.real, n.min)
			continue
		}
		if fp := fingerprints[n.real]; !strings.Contains(body, fp) {
			t.Errorf("import %s: field %q is %q, which lacks %q", n.real, n.min, body, fp)
		}
	}
}

func TestVerify(t *testing.T) {
	good := shapeOf(testEngine(t).compiled)
	if err := verify(good); err != nil {
		t.Fatalf("the embedded module fails verification: %v", err)
	}

	clone := func() moduleShape {
		s := moduleShape{imports: map[string]signature{}, exports: map[string]signature{}, ownsMemory: good.ownsMemory}
		for k, v := range good.imports {
			s.imports[k] = v
		}
		for k, v := range good.exports {
			s.exports[k] = v
		}
		return s
	}
	tests := []struct {
		name   string
		change func(*moduleShape)
		want   string
	}{
		{"missing export", func(s *moduleShape) { delete(s.exports, "qa") },
			`javascript: export QTS_Eval (minified "qa") missing`},
		{"retyped export", func(s *moduleShape) { s.exports["qa"] = sig(types(i32), i32) },
			`javascript: export QTS_Eval (minified "qa") has signature (i32)->i32, want (i32,i32,i32,i32,i32,i32)->i32`},
		{"missing import", func(s *moduleShape) { delete(s.imports, "a.c") },
			`javascript: import fd_write (minified "a.c") missing`},
		{"retyped import", func(s *moduleShape) { s.imports["a.p"] = sig(nil, api.ValueTypeI32) },
			`javascript: import emscripten_date_now (minified "a.p") has signature ()->i32, want ()->f64`},
		{"unknown import", func(s *moduleShape) { s.imports["a.zz"] = sig(nil) },
			`javascript: import "a.zz" is unknown: capsule provides no function for it`},
		{"imported memory", func(s *moduleShape) { s.ownsMemory, s.importsMemory = false, true },
			`javascript: the module must define and export its memory as "memory"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := clone()
			tt.change(&s)
			err := verify(s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("verify = %v, want an error containing %s", err, tt.want)
			}
		})
	}
}
