package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"testing/fstest"
)

const zeroSum = "0000000000000000000000000000000000000000000000000000000000000000"

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestParseSource(t *testing.T) {
	cases := []struct {
		name, text, err string
		want            Component
	}{
		{name: "debian source", text: "name=zlib\nkind=debian-source\nversion=1:1.2.13.dfsg-1\ndsc=zlib_1.2.13.dfsg-1.dsc\ndsc_sha256=" + zeroSum + "\nhomepage=\n",
			want: Component{Name: "zlib", Kind: KindDebianSource, Version: "1:1.2.13.dfsg-1", SHA256: zeroSum}},
		{name: "npm", text: "name=@jitl/x\nkind=npm\nversion=0.32.0\ntarball_sha256=" + zeroSum,
			want: Component{Name: "@jitl/x", Kind: KindNPM, Version: "0.32.0", SHA256: zeroSum}},
		{name: "binary without its .deb hash", text: "name=wasi-libc\nkind=debian-binary\nversion=1\ndeb_sha256=\n",
			want: Component{Name: "wasi-libc", Kind: KindDebianBinary, Version: "1"}},
		{name: "binary with a bad .deb hash", text: "name=wasi-libc\nkind=debian-binary\nversion=1\ndeb_sha256=abc\n", err: "deb_sha256"},
		{name: "bundled", text: "name=python3-six\nkind=debian-bundled\nversion=1.16.0-4\ndeb_sha256=" + zeroSum + "\nmodules=six\n",
			want: Component{Name: "python3-six", Kind: KindDebianBundled, Version: "1.16.0-4", SHA256: zeroSum}},
		// A bundled package is downloaded by the build, so its hash is known.
		{name: "bundled without its .deb hash", text: "name=python3-six\nkind=debian-bundled\nversion=1\ndeb_sha256=\n", err: "deb_sha256"},
		{name: "source without its .dsc hash", text: "name=zlib\nkind=debian-source\nversion=1\ndsc_sha256=\n", err: "dsc_sha256"},
		{name: "no name", text: "kind=npm\nversion=1\ntarball_sha256=" + zeroSum, err: "no name"},
		{name: "unknown kind", text: "name=x\nkind=pip\nversion=1", err: "unknown kind"},
		{name: "no version", text: "name=x\nkind=npm\ntarball_sha256=" + zeroSum, err: "no version"},
		{name: "not key=value", text: "name=x\ngarbage\n", err: "line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSource(c.text)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != c.want.Name || got.Kind != c.want.Kind || got.Version != c.want.Version || got.SHA256 != c.want.SHA256 {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseSums(t *testing.T) {
	cases := []struct {
		name, text, err string
		want            int
	}{
		{name: "two files", text: zeroSum + "  a.wasm\n" + zeroSum + "  VERSION\n", want: 2},
		{name: "blank lines", text: "\n" + zeroSum + "  a.wasm\n\n", want: 1},
		{name: "one space", text: zeroSum + " a.wasm\n", err: "line 1"},
		{name: "short hash", text: "abc  a.wasm\n", err: "line 1"},
		{name: "twice", text: zeroSum + "  a\n" + zeroSum + "  a\n", err: "twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSums(c.text)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || len(got) != c.want {
				t.Fatalf("got %v, %v; want %d entries", got, err, c.want)
			}
		})
	}
}

// TestNew: the embedded files and the build's ASSETS must name the same
// files, and at least one component must be recorded.
func TestNew(t *testing.T) {
	wasm, version := []byte("\x00asm"), []byte("v=1\n")
	sources := fstest.MapFS{
		"dist/sources/zlib/SOURCE":    {Data: []byte("name=zlib\nkind=debian-source\nversion=1\ndsc_sha256=" + zeroSum)},
		"dist/sources/zlib/copyright": {Data: []byte("licence")},
	}
	both := sum(wasm) + "  a.wasm\n" + sum(version) + "  VERSION\n"
	cases := []struct {
		name     string
		embedded map[string][]byte
		sums     string
		sources  fstest.MapFS
		dirs     []string // default: dist/sources
		err      string
	}{
		{name: "matching", embedded: map[string][]byte{"a.wasm": wasm, "VERSION": version}, sums: both, sources: sources},
		{name: "built but not embedded", embedded: map[string][]byte{"a.wasm": wasm}, sums: both, sources: sources, err: "does not embed it"},
		{name: "embedded without a hash", embedded: map[string][]byte{"a.wasm": wasm, "VERSION": version, "tz.zip": nil}, sums: both, sources: sources, err: "tz.zip is embedded"},
		{name: "no component", embedded: map[string][]byte{"a.wasm": wasm, "VERSION": version}, sums: both, sources: fstest.MapFS{}, err: "no component"},
		{name: "no component in the second directory", embedded: map[string][]byte{"a.wasm": wasm, "VERSION": version}, sums: both,
			sources: sources, dirs: []string{"dist/sources", "dist/bundle/sources"}, err: "no component recorded under dist/bundle/sources"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dirs := c.dirs
			if dirs == nil {
				dirs = []string{"dist/sources"}
			}
			r, err := New("test", c.embedded, c.sums, c.sources, dirs...)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Assets) != 2 || r.Assets[0].Name != "VERSION" || len(r.Components) != 1 || r.Components[0].Name != "zlib" {
				t.Fatalf("got %+v", r)
			}
			if errs := r.Verify(); len(errs) != 0 {
				t.Fatalf("Verify: %v", errs)
			}
		})
	}
}

// TestNewTwoSourceDirectories: components from both directories, sorted
// by name, and the assets of both ASSETS texts.
func TestNewTwoSourceDirectories(t *testing.T) {
	wasm, zip := []byte("\x00asm"), []byte("PK")
	sources := fstest.MapFS{
		"dist/sources/zlib/SOURCE":               {Data: []byte("name=zlib\nkind=debian-source\nversion=1\ndsc_sha256=" + zeroSum)},
		"dist/bundle/sources/python3-six/SOURCE": {Data: []byte("name=python3-six\nkind=debian-bundled\nversion=1\ndeb_sha256=" + zeroSum)},
	}
	sums := sum(wasm) + "  a.wasm\n" + sum(zip) + "  bundle/packages.zip\n"
	r, err := New("test", map[string][]byte{"a.wasm": wasm, "bundle/packages.zip": zip}, sums, sources, "dist/sources", "dist/bundle/sources")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Components) != 2 || r.Components[0].Name != "python3-six" || r.Components[1].Name != "zlib" {
		t.Fatalf("components %+v", r.Components)
	}
	if len(r.Assets) != 2 || r.Assets[1].Name != "bundle/packages.zip" {
		t.Fatalf("assets %+v", r.Assets)
	}
}

// TestVerifyFindsAChangedByte: one flipped byte in an embedded file is
// reported, naming the file.
func TestVerifyFindsAChangedByte(t *testing.T) {
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	sources := fstest.MapFS{"s/x/SOURCE": {Data: []byte("name=x\nkind=npm\nversion=1\ntarball_sha256=" + zeroSum)}}
	r, err := New("test", map[string][]byte{"a.wasm": wasm}, sum(wasm)+"  a.wasm\n", sources, "s")
	if err != nil {
		t.Fatal(err)
	}
	wasm[5] ^= 1
	errs := r.Verify()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "test/a.wasm") {
		t.Fatalf("Verify after a flipped byte: %v", errs)
	}
}
