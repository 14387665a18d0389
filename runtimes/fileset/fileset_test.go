package fileset

import (
	"encoding/json"
	"errors"
	"path"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCheckPath(t *testing.T) {
	tests := []struct {
		path string
		rule string // "" for a valid path
	}{
		{"data.csv", ""},
		{"in/a.json", ""},
		{"a b/ü.txt", ""},
		{"a/b/c/d/e/f/g/h", ""},
		{strings.Repeat("x", 255), ""},
		{".hidden", ""},
		{"", "empty"},
		{"/etc/passwd", "absolute"},
		{"../x", `".."`},
		{"a/../../x", `".."`},
		{"a/..", `".."`},
		{"a\x00b", "NUL"},
		{"a\nb", "control character"},
		{"a\x7fb", "control character"},
		{strings.Repeat("x", 256), "256 bytes, longer than 255"},
		{"a/b/c/d/e/f/g/h/i", "9 levels, more than 8"},
		{"a//b", "empty or"},
		{"a/", "empty or"},
		{"./a", "empty or"},
		{"a/./b", "empty or"},
		{"\xff.txt", "UTF-8"},
		// Names that show as something they are not (issue 32): every
		// character must show as itself.
		{"日本語/données.csv", ""},
		{"a\u00a0b.txt", ""}, // a no-break space shows as a space
		{"émoji 😀.txt", ""},
		{"حساب.txt", ""}, // right-to-left letters are letters, not controls
		{"a\u0085b", "line or paragraph separator (U+0085)"},
		{"a\u2028b", "line or paragraph separator (U+2028)"},
		{"a\u2029b", "line or paragraph separator (U+2029)"},
		{"a\u0080b", "control character (U+0080)"},
		{"a\u009bb", "control character (U+009B)"},
		{"a\x1b[31mb", "control character (U+001B)"},
		{"inv\u202etxt.exe", "bidirectional control character (U+202E)"},
		{"a\u202ab", "bidirectional control character (U+202A)"},
		{"a\u2066b", "bidirectional control character (U+2066)"},
		{"a\u2069b", "bidirectional control character (U+2069)"},
		{"a\u200eb", "bidirectional control character (U+200E)"},
		{"a\u200fb", "bidirectional control character (U+200F)"},
		{"a\u061cb", "bidirectional control character (U+061C)"},
		{"a\u200bb", "invisible character (U+200B)"},
		{"a\u200cb", "invisible character (U+200C)"},
		{"a\u200db", "invisible character (U+200D)"},
		{"a\u2060b", "invisible character (U+2060)"},
		{"\ufeffa.txt", "invisible character (U+FEFF)"},
		{"a\u00adb", "invisible character (U+00AD)"},      // soft hyphen
		{"a\u034fb", "invisible character (U+034F)"},      // combining grapheme joiner
		{"a\u3164b", "invisible character (U+3164)"},      // Hangul filler, a blank letter
		{"a\ufe0fb", "invisible character (U+FE0F)"},      // variation selector
		{"a\U000e0041b", "invisible character (U+E0041)"}, // tag character
		{"a/b\u2062/c", "invisible character (U+2062)"},   // invisible times, in a directory
	}
	for _, tt := range tests {
		err := CheckPath(tt.path)
		if tt.rule == "" {
			if err != nil {
				t.Errorf("CheckPath(%q) = %v, want nil", tt.path, err)
			}
			continue
		}
		var pe *PathError
		if !errors.As(err, &pe) || pe.Path != tt.path || !strings.Contains(err.Error(), tt.rule) {
			t.Errorf("CheckPath(%q) = %v, want a PathError naming %q", tt.path, err, tt.rule)
		}
	}
}

func TestCheckCollisions(t *testing.T) {
	tests := []struct {
		paths []string
		bad   string // the path the error names, "" for none
		rule  string
	}{
		{[]string{"a", "b", "c/d", "c/e"}, "", ""},
		{[]string{"a", "a/b"}, "a/b", `inside "a", which is a file`},
		{[]string{"a/b/c", "a/b"}, "a/b/c", `inside "a/b"`}, // sorted first
		{[]string{"a", "A"}, "", ""},                        // the scratch directory is case-sensitive
		{[]string{"a-b", "a", "a/b"}, "a/b", "inside"},
		{[]string{"outputs/x.csv"}, "outputs/x.csv", "outputs/"},
		{[]string{"outputs"}, "outputs", "outputs/"},
		{[]string{"outputs.csv", "my/outputs/x"}, "", ""},
	}
	for _, tt := range tests {
		var files []File
		for _, p := range tt.paths {
			files = append(files, File{Path: p})
		}
		err := Check(files)
		if tt.bad == "" {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", tt.paths, err)
			}
			continue
		}
		var pe *PathError
		if !errors.As(err, &pe) || pe.Path != tt.bad || !strings.Contains(pe.Rule, tt.rule) {
			t.Errorf("Check(%q) = %v, want the path %q and %q", tt.paths, err, tt.bad, tt.rule)
		}
	}
	if err := Check([]File{{Path: "x"}, {Path: "x"}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a path given twice: %v", err)
	}
}

func TestFromArgument(t *testing.T) {
	tests := []struct {
		json  string
		want  []File
		error string
	}{
		{json: `{}`, want: []File{}},
		{json: `{"b.txt": "hi", "a.bin": {"base64": "AAEC/w=="}}`,
			want: []File{{Path: "a.bin", Data: []byte{0, 1, 2, 255}, Binary: true}, {Path: "b.txt", Data: []byte("hi")}}},
		{json: `{"a": {"base64": "AAEC/w"}}`, want: []File{{Path: "a", Data: []byte{0, 1, 2, 255}, Binary: true}}},
		{json: `{"a": {"base64": "AAEC\n/w==\n"}}`, want: []File{{Path: "a", Data: []byte{0, 1, 2, 255}, Binary: true}}},
		{json: `{"a": {"base64": ""}}`, want: []File{{Path: "a", Data: []byte{}, Binary: true}}},
		{json: `[]`, error: `argument "files" must be an object`},
		{json: `{"a": 1}`, error: `file "a": the content must be a string`},
		{json: `{"a": {"base64": 1}}`, error: `file "a": the content must be a string`},
		{json: `{"a": {"base64": "AA==", "x": 1}}`, error: `file "a": the content must be a string`},
		{json: `{"a": {"text": "x"}}`, error: `file "a": the content must be a string`},
		{json: `{"a": {"base64": "AA*A"}}`, error: `file "a": the content is not valid base64 (standard alphabet A-Z a-z 0-9 + /): bad input at byte 2`},
		{json: `{"a": {"base64": "AA-_"}}`, error: `not valid base64`},
		{json: `{"a": {"base64": "A"}}`, error: `not valid base64`},
		{json: `{"../a": "x"}`, error: `file "../a": the path contains ".."`},
		{json: `{"/a": "x"}`, error: `absolute`},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.json), &v); err != nil {
			t.Fatal(err)
		}
		got, err := FromArgument(v)
		if tt.error != "" {
			if err == nil || !strings.Contains(err.Error(), tt.error) {
				t.Errorf("FromArgument(%s) = %v, want an error containing %q", tt.json, err, tt.error)
			}
			continue
		}
		if err != nil {
			t.Errorf("FromArgument(%s): %v", tt.json, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("FromArgument(%s) = %+v, want %+v", tt.json, got, tt.want)
			continue
		}
		for i := range got {
			g, w := got[i], tt.want[i]
			if g.Path != w.Path || string(g.Data) != string(w.Data) || g.Binary != w.Binary {
				t.Errorf("FromArgument(%s)[%d] = %+v, want %+v", tt.json, i, g, w)
			}
		}
	}
}

func TestCompare(t *testing.T) {
	ordered := []string{"A", "a", "a/b", "a/b/c", "a/c", "a-b", "a.txt", "b"}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(a, b); got != want {
				t.Errorf("Compare(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestClassify(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n....")
	tests := []struct {
		path string
		data []byte
		want Kind
	}{
		{"a.csv", []byte("x,y\n1,2\n"), Kind{MIME: "text/csv", Text: true}},
		{"a.CSV", []byte("x"), Kind{MIME: "text/csv", Text: true}},
		{"a.csv", []byte("caf\xe9"), Kind{MIME: "text/csv"}}, // Latin-1: sent as a blob
		{"chart.png", png, Kind{MIME: "image/png", Image: true}},
		{"chart.dat", png, Kind{MIME: "image/png", Image: true}},
		{"x.jpg", []byte("\xff\xd8\xff\xe0"), Kind{MIME: "image/jpeg", Image: true}},
		{"x.gif", []byte("GIF89a..."), Kind{MIME: "image/gif", Image: true}},
		{"x.webp", []byte("RIFF\x00\x00\x00\x00WEBPVP8 "), Kind{MIME: "image/webp", Image: true}},
		// A name that claims an image its bytes do not show claims nothing
		// (issue 32): the type is not an image's.
		{"fake.png", []byte("not a png"), Kind{MIME: "application/octet-stream"}},
		{"fake.jpg", []byte("hello"), Kind{MIME: "application/octet-stream"}},
		{"fake.gif", []byte("GIF90a"), Kind{MIME: "application/octet-stream"}},
		{"fake.webp", []byte("RIFF\x00\x00\x00\x00WAVE"), Kind{MIME: "application/octet-stream"}},
		{"fake.bmp", []byte("BMW sales, 2024\n"), Kind{MIME: "application/octet-stream"}},
		{"fake.ico", []byte("icon"), Kind{MIME: "application/octet-stream"}},
		{"fake.tiff", []byte("II"), Kind{MIME: "application/octet-stream"}},
		{"fake.svg", []byte("x,y\n1,2\n"), Kind{MIME: "application/octet-stream"}},
		{"empty.png", nil, Kind{MIME: "application/octet-stream"}},
		{"x.bmp", []byte("BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00"), Kind{MIME: "image/bmp"}},
		{"x.bin", []byte("BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00"), Kind{MIME: "image/bmp"}},
		{"x.ico", []byte("\x00\x00\x01\x00\x01\x00\x10\x10"), Kind{MIME: "image/vnd.microsoft.icon"}},
		{"x.tif", []byte("II*\x00\x08\x00\x00\x00"), Kind{MIME: "image/tiff"}},
		{"x.tiff", []byte("MM\x00*\x00\x00\x00\x08"), Kind{MIME: "image/tiff"}},
		{"d.svg", []byte("<svg/>"), Kind{MIME: "image/svg+xml", Text: true}},
		{"d.svg", []byte("\ufeff<?xml version=\"1.0\"?>\n<!-- a chart -->\n<svg xmlns=\"http://www.w3.org/2000/svg\">"), Kind{MIME: "image/svg+xml", Text: true}},
		{"d.svg", []byte("<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"x\">\n<svg\n width=\"1\">"), Kind{MIME: "image/svg+xml", Text: true}},
		{"d.svg", []byte("<svgx>"), Kind{MIME: "application/octet-stream"}},
		{"d.svg", []byte("<html><svg></svg></html>"), Kind{MIME: "application/octet-stream"}},
		{"report.pdf", []byte("%PDF-1.4"), Kind{MIME: "application/pdf"}},
		{"noext", []byte("hello"), Kind{MIME: "application/octet-stream"}},
		{"dir.d/noext", []byte("hello"), Kind{MIME: "application/octet-stream"}},
		{"x.yaml", []byte("a: 1"), Kind{MIME: "application/yaml", Text: true}},
	}
	for _, tt := range tests {
		if got := Classify(tt.path, tt.data); got != tt.want {
			t.Errorf("Classify(%q, %q) = %+v, want %+v", tt.path, tt.data, got, tt.want)
		}
	}
}

// TestClassifyFile checks that a file not sent, whose bytes are not read,
// is typed by its name, and one sent by its bytes.
func TestClassifyFile(t *testing.T) {
	tests := []struct {
		f    File
		want Kind
	}{
		{File{Path: "big.png", Truncated: true, Size: 1 << 30}, Kind{MIME: "image/png"}},
		{File{Path: "big.csv", Truncated: true, Size: 1 << 30}, Kind{MIME: "text/csv"}},
		{File{Path: "a.png", Data: []byte("text")}, Kind{MIME: "application/octet-stream"}},
		{File{Path: "a.csv", Data: []byte("x")}, Kind{MIME: "text/csv", Text: true}},
	}
	for _, tt := range tests {
		if got := ClassifyFile(tt.f); got != tt.want {
			t.Errorf("ClassifyFile(%+v) = %+v, want %+v", tt.f, got, tt.want)
		}
	}
}

func TestPicker(t *testing.T) {
	p := NewPicker(Limits{MaxBytes: 10, MaxFiles: 3})
	type pick struct{ send, list bool }
	var got []pick
	for _, size := range []int64{4, 8, 6, 0, 0, -1} {
		s, l := p.Pick(size)
		got = append(got, pick{s, l})
	}
	want := []pick{{true, true}, {false, true}, {true, true}, {true, true}, {false, true}, {false, false}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("picks %v, want %v", got, want)
		}
	}
	p = NewPicker(Limits{MaxBytes: 1 << 30, MaxFiles: 1 << 20})
	for i := range MaxListed {
		if s, l := p.Pick(1); !s || !l {
			t.Fatalf("file %d not sent", i)
		}
	}
	if s, l := p.Pick(1); s || l {
		t.Fatalf("file %d listed, beyond MaxListed", MaxListed)
	}
}

func FuzzFromArgument(f *testing.F) {
	for _, s := range []string{`{"a.csv": "x"}`, `{"a": {"base64": "AAEC"}}`, `{"a/b": "", "a": "x"}`, `{"../x": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		files, err := FromArgument(v)
		if err != nil {
			return
		}
		c := PathSet{}
		for i, f := range files {
			if CheckPath(f.Path) != nil || c.Add(f.Path) != nil {
				t.Fatalf("accepted %q", f.Path)
			}
			if i > 0 && Compare(files[i-1].Path, f.Path) >= 0 {
				t.Fatalf("not sorted: %q before %q", files[i-1].Path, f.Path)
			}
		}
	})
}

func TestCollector(t *testing.T) {
	c := NewCollector(Limits{MaxBytes: 6, MaxFiles: 10})
	reads := 0
	read := func(s string) func() ([]byte, error) {
		return func() ([]byte, error) { reads++; return []byte(s), nil }
	}
	c.Add("a", 3, false, read("abc"))
	c.Add("a/b", 1, false, read("x"))    // inside a file
	c.Add("big", 9, true, read("never")) // over the bytes: listed, not read
	c.Add("c", 2, false, read("cd"))
	c.Add("d", 1, false, func() ([]byte, error) { return nil, errors.New("gone") })
	for i := range 10 {
		c.Add("../"+strconv.Itoa(i), 1, false, read("x"))
	}
	var got []string
	for _, f := range c.Files {
		got = append(got, f.Path+"="+string(f.Data))
	}
	if strings.Join(got, " ") != "a=abc big= c=cd" || !c.Files[1].Truncated || c.Files[1].Size != 9 || reads != 2 {
		t.Fatalf("files %q, %d reads", got, reads)
	}
	err := c.Err()
	if err == nil || !strings.Contains(err.Error(), `file "a/b": the path is inside "a"`) || !strings.Contains(err.Error(), `file "d" could not be read: gone`) ||
		!strings.HasSuffix(err.Error(), "; and 4 more") {
		t.Fatalf("error %v", err)
	}
}

// defaultIgnorable is Unicode's Default_Ignorable_Code_Point property
// (DerivedCoreProperties.txt, Unicode 15.0), written out here as an oracle
// independent of CharRule, which derives it from general categories.
var defaultIgnorable = [][2]rune{
	{0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160}, {0x17B4, 0x17B5},
	{0x180B, 0x180F}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x206F}, {0x3164, 0x3164},
	{0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3},
	{0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
}

func isDefaultIgnorable(r rune) bool {
	for _, rg := range defaultIgnorable {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

// mustRefuse reports whether a name rule must refuse r: controls, line and
// paragraph separators, and every default-ignorable code point (bidi
// controls and zero-width characters among them).
func mustRefuse(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || isDefaultIgnorable(r)
}

// TestCharRuleCoversEveryInvisible checks every code point: each that must
// be refused is, and what else is refused is a format character (general
// category Cf), never a letter, digit, mark, symbol, punctuation or space.
func TestCharRuleCoversEveryInvisible(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		rule := CharRule(r)
		switch {
		case mustRefuse(r) && rule == "":
			t.Errorf("U+%04X is allowed in names; it must be refused", r)
		case !mustRefuse(r) && rule != "" && !unicode.Is(unicode.Cf, r):
			t.Errorf("U+%04X is refused (%s), though it shows as itself", r, rule)
		}
	}
}

// FuzzCheckPath holds CheckPath to the rules, checked here independently:
// a path it accepts is valid UTF-8, relative and clean, within the length
// and depth bounds, and holds no character that must be refused.
func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"a.csv", "a/b/c", "inv\u202etxt.exe", "a\u200bb", "\ufeff", "a\u2028", "../x", "日本/語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := CheckPath(p)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != p || pe.Rule == "" {
				t.Fatalf("CheckPath(%q) = %v, not a PathError for the path", p, err)
			}
			return
		}
		if !utf8.ValidString(p) || p == "" || len(p) > MaxPathBytes || path.Clean(p) != p || path.IsAbs(p) ||
			p == ".." || strings.HasPrefix(p, "../") || strings.Count(p, "/") >= MaxDepth {
			t.Fatalf("accepted %q", p)
		}
		for _, r := range p {
			if mustRefuse(r) {
				t.Fatalf("accepted %q, which holds U+%04X", p, r)
			}
		}
	})
}

// FuzzClassify holds Classify's sniffing to its promise on any bytes and
// name: a type that claims an image is one the bytes show, only PNG, JPEG,
// GIF and WebP are sent as image content, and text is valid UTF-8.
func FuzzClassify(f *testing.F) {
	for _, s := range [][2]string{{"a.png", "\x89PNG\r\n\x1a\n"}, {"a.png", "text"}, {"a.svg", "<?xml?><!-- x --><svg>"},
		{"a.bmp", "BM\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x28\x00\x00\x00"}, {"a.csv", "x,y"}, {"a.ico", "\x00\x00\x01\x00\x01\x00"}} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		k := Classify(name, data)
		sniffed, shown := imageType(data)
		switch {
		case k.Image && (!shown || k.MIME != sniffed):
			t.Fatalf("Classify(%q, %q) = %+v: image content the bytes do not show", name, data, k)
		case strings.HasPrefix(k.MIME, "image/") && k.MIME != sniffed && !(k.MIME == svgType && looksLikeSVG(data)):
			t.Fatalf("Classify(%q, %q) = %+v: an image type the bytes do not show", name, data, k)
		case k.Text && !utf8.Valid(data):
			t.Fatalf("Classify(%q, %q) = %+v: text that is not UTF-8", name, data, k)
		}
	})
}
