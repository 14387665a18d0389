package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// filesFlags are the limits the files tests' servers run with: small, so
// that going over them costs little.
var filesFlags = []string{"--max-files-in", "256KiB", "--max-files-out", "64KiB", "--max-files-out-count", "4", "--scratch", "160KiB"}

// onBothTransports runs f against a stdio server and an HTTP server, each
// started with flags, through mcp-go's client.
func onBothTransports(t *testing.T, flags []string, f func(t *testing.T, s *testServer)) {
	t.Run("stdio", func(t *testing.T) { f(t, startServer(t, flags...)) })
	t.Run("http", func(t *testing.T) { f(t, startHTTPServer(t, nil, flags...).client(t, nil)) })
}

// filesOf lists structuredContent's files as path:size:mime, with a * for
// truncated.
func filesOf(st structured) string {
	var parts []string
	for _, f := range st.Files {
		p := fmt.Sprintf("%s:%d:%s", f.Path, f.Size, f.MIMEType)
		if f.Truncated {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// pngPython writes a 3×2 red PNG with zlib and struct alone.
const pngPython = `import zlib, struct
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
raw = b''.join(b'\x00' + b'\xff\x00\x00' * 3 for _ in range(2))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 3, 2, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
open('outputs/chart.png', 'wb').write(png)
`

func TestFilesRoundTrip(t *testing.T) {
	blob := make([]byte, 256)
	for i := range blob {
		blob[i] = byte(i)
	}
	b64 := base64.StdEncoding.EncodeToString(blob)
	onBothTransports(t, filesFlags, func(t *testing.T, s *testServer) {
		t.Run("python", func(t *testing.T) {
			res, st := s.callArgs(t, "execute_python", map[string]any{
				"code": pngPython + `import csv, collections
t = collections.Counter()
for r in csv.DictReader(open('sales.csv')):
    t[r['region']] += float(r['amount'])
with open('outputs/summary.csv', 'w', newline='') as f:
    csv.writer(f).writerows([('region', 'total'), *sorted(t.items())])
open('outputs/copy.bin', 'wb').write(open('/tmp/in/blob.bin', 'rb').read())
len(open('in/blob.bin', 'rb').read())`,
				"files": map[string]any{
					"sales.csv":   "region,amount\nnorth,10\nsouth,5\nnorth,2.5\n",
					"in/blob.bin": map[string]any{"base64": b64},
				},
			})
			check(t, res, st, expectation{result: "256", text: "[files]\nchart.png (image/png, "})
			want := "chart.png:" + fmt.Sprint(st.Files[0].Size) + ":image/png copy.bin:256:application/octet-stream summary.csv:37:text/csv"
			if got := filesOf(st); got != want {
				t.Fatalf("files %q, want %q", got, want)
			}
			checkContents(t, res, []string{"image image/png", "blob file:///tmp/outputs/copy.bin " + b64,
				"text file:///tmp/outputs/summary.csv region,total\r\nnorth,12.5\r\nsouth,5.0\r\n"})
		})
		t.Run("javascript", func(t *testing.T) {
			res, st := s.callArgs(t, "execute_javascript", map[string]any{
				"code": `outputs['echo.txt'] = files['a.txt'] + '!';
outputs['inverse.bin'] = files['b.bin'].map(x => 255 - x);
[typeof files['a.txt'], files['b.bin'] instanceof Uint8Array]`,
				"files": map[string]any{"a.txt": "grüße", "b.bin": map[string]any{"base64": "AAH/"}},
			})
			check(t, res, st, expectation{result: `["string",true]`})
			if got := filesOf(st); got != "echo.txt:8:text/plain inverse.bin:3:application/octet-stream" {
				t.Fatalf("files %q", got)
			}
			checkContents(t, res, []string{"text file:///tmp/outputs/echo.txt grüße!", "blob file:///tmp/outputs/inverse.bin //4A"})
		})
	})
}

// checkContents checks the content after the text: one line per item,
// "image MIME", "text URI TEXT" or "blob URI BASE64".
func checkContents(t *testing.T, res *mcp.CallToolResult, want []string) {
	t.Helper()
	var got []string
	for _, c := range res.Content[1:] {
		switch c := c.(type) {
		case mcp.ImageContent:
			data, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("image content is not a PNG: %v", err)
			}
			got = append(got, "image "+c.MIMEType)
		case mcp.EmbeddedResource:
			switch r := c.Resource.(type) {
			case mcp.TextResourceContents:
				got = append(got, "text "+r.URI+" "+r.Text)
			case mcp.BlobResourceContents:
				got = append(got, "blob "+r.URI+" "+r.Blob)
			}
		default:
			got = append(got, fmt.Sprintf("%T", c))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("contents:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFilesRefused passes files that break each rule: each call gets a
// tool error naming the path and the rule, nothing runs, and the server
// carries on.
func TestFilesRefused(t *testing.T) {
	cases := []struct {
		name  string
		files any
		want  string
	}{
		{"absolute", map[string]any{"/etc/passwd": "x"}, `file "/etc/passwd": the path is absolute`},
		{"dot dot", map[string]any{"a/../../x": "x"}, `file "a/../../x": the path contains ".."`},
		{"NUL", map[string]any{"a\x00b": "x"}, `file "a\x00b": the path contains a NUL byte`},
		{"too long", map[string]any{strings.Repeat("n", 256): "x"}, "the path is 256 bytes, longer than 255"},
		{"too deep", map[string]any{"1/2/3/4/5/6/7/8/9.txt": "x"}, `file "1/2/3/4/5/6/7/8/9.txt": the path has 9 levels, more than 8`},
		{"file and directory", map[string]any{"a": "x", "a/b": "y"}, `file "a/b": the path is inside "a", which is a file`},
		{"outputs", map[string]any{"outputs/x": "x"}, `file "outputs/x": the path is in outputs/`},
		{"bad base64", map[string]any{"x.bin": map[string]any{"base64": "not base64!"}}, `file "x.bin": the content is not valid base64`},
		{"bad content", map[string]any{"x": 3}, `file "x": the content must be a string (UTF-8 text) or {"base64": "..."} (bytes), got a number`},
		{"not an object", []any{"x"}, `argument "files" must be an object`},
		// Names that show as something else (issue 32).
		{"bidi override", map[string]any{"inv\u202etxt.exe": "x"}, `file "inv\u202etxt.exe": the path contains a bidirectional control character (U+202E)`},
		{"zero width", map[string]any{"a\u200bb.csv": "x"}, `file "a\u200bb.csv": the path contains an invisible character (U+200B)`},
		{"line separator", map[string]any{"a\u2028b": "x"}, `the path contains a line or paragraph separator (U+2028)`},
		{"next line", map[string]any{"a\u0085b": "x"}, `the path contains a line or paragraph separator (U+0085)`},
		{"escape", map[string]any{"a\x1b[31m": "x"}, `file "a\x1b[31m": the path contains a control character (U+001B)`},
	}
	onBothTransports(t, filesFlags, func(t *testing.T, s *testServer) {
		for _, tc := range cases {
			for _, tool := range []string{"execute_python", "execute_javascript"} {
				res, _ := s.callArgs(t, tool, map[string]any{"code": "print('ran')", "files": tc.files})
				if !res.IsError || !strings.Contains(text(res), tc.want) || strings.Contains(text(res), "ran") {
					t.Errorf("%s, %s: isError %v, text %q; want an error naming %q", tc.name, tool, res.IsError, text(res), tc.want)
				}
			}
		}
		res, st := s.call(t, "execute_python", "1 + 1")
		check(t, res, st, expectation{result: "2"})
	})
}

func TestFilesLimits(t *testing.T) {
	onBothTransports(t, filesFlags, func(t *testing.T, s *testServer) {
		big := strings.Repeat("x", 300<<10)
		res, st := s.callArgs(t, "execute_javascript", map[string]any{"code": "1", "files": map[string]any{"big.txt": big}})
		check(t, res, st, expectation{isError: true, limit: "files_in", errContains: "files_in: the files passed in are 307200 bytes in all, over the 256KiB limit"})

		res, st = s.callArgs(t, "execute_python", map[string]any{"code": "1", "files": map[string]any{"a.txt": big[:200<<10]}})
		check(t, res, st, expectation{isError: true, limit: "scratch", errContains: "over the 160KiB of a Python call's /tmp"})

		res, st = s.callArgs(t, "execute_javascript", map[string]any{"code": "files['a.txt'].length", "files": map[string]any{"a.txt": big[:200<<10]}})
		check(t, res, st, expectation{result: "204800"})

		res, st = s.call(t, "execute_python", "for i in range(6):\n    open('outputs/%d.txt' % i, 'w').write(str(i) * (20 << 10))")
		check(t, res, st, expectation{isError: true, limit: "files_out",
			errContains: "files_out: 3 files were not sent, over the limit of 64KiB and 4 files per call; they are listed with truncated: true"})
		if got := filesOf(st); got != "0.txt:20480:text/plain 1.txt:20480:text/plain 2.txt:20480:text/plain 3.txt:20480:text/plain* 4.txt:20480:text/plain* 5.txt:20480:text/plain*" {
			t.Errorf("files %q", got)
		}
		if len(res.Content) != 4 || !strings.Contains(text(res), "3.txt (text/plain, 20480 bytes): not sent, over the files_out limit") {
			t.Errorf("%d contents, text %q", len(res.Content), text(res))
		}
		res, st = s.call(t, "execute_javascript", "for (let i = 0; i < 6; i++) outputs[i + '.txt'] = 'x'")
		check(t, res, st, expectation{isError: true, limit: "files_out", errContains: "files_out: 2 files were not sent"})
	})
}

// TestFilesOversizedMessage sends files far over the request body limit:
// the transport refuses the message, and the server carries on.
func TestFilesOversizedMessage(t *testing.T) {
	onBothTransports(t, filesFlags, func(t *testing.T, s *testServer) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = "execute_python"
		req.Params.Arguments = map[string]any{"code": "1", "files": map[string]any{"big.bin": map[string]any{"base64": strings.Repeat("A", 6<<20)}}}
		if res, err := s.c.CallTool(ctx, req); err == nil && !res.IsError {
			t.Fatalf("a 6 MiB message was taken: %s", text(res))
		}
		res, st := s.call(t, "execute_javascript", "6 * 7")
		check(t, res, st, expectation{result: "42"})
	})
}

func TestFilesAfterErrorAndTimeout(t *testing.T) {
	cases := []struct {
		tool, code, files string
		e                 expectation
	}{
		{"execute_python", "open('outputs/log.txt', 'w').write('partial')\nraise ValueError('boom')", "log.txt:7:text/plain",
			expectation{isError: true, errType: "ValueError"}},
		{"execute_python", "import time\nopen('outputs/log.txt', 'w').write('partial')\ntime.sleep(30)", "log.txt:7:text/plain",
			expectation{isError: true, limit: "timeout"}},
		{"execute_javascript", "outputs['log.txt'] = 'partial'; throw new TypeError('boom')", "log.txt:7:text/plain",
			expectation{isError: true, errType: "TypeError"}},
		{"execute_javascript", "outputs['log.txt'] = 'partial'; while (true) {}", "log.txt:7:text/plain",
			expectation{isError: true, limit: "timeout"}},
	}
	onBothTransports(t, filesFlags, func(t *testing.T, s *testServer) {
		for _, tc := range cases {
			res, st := s.callArgs(t, tc.tool, map[string]any{"code": tc.code, "timeout_seconds": 1})
			check(t, res, st, tc.e)
			if got := filesOf(st); got != tc.files {
				t.Errorf("%s %q: files %q, want %q", tc.tool, tc.code, got, tc.files)
			}
		}
	})
}

// TestFilesDoNotOutliveTheirCall checks that nothing of one call's files,
// in or out, is seen by the next.
func TestFilesDoNotOutliveTheirCall(t *testing.T) {
	onBothTransports(t, filesFlags, func(t *testing.T, s *testServer) {
		for range 3 { // more calls than the pool holds workers
			res, st := s.callArgs(t, "execute_python", map[string]any{
				"code":  "import os\nr = [sorted(os.listdir('.')), os.listdir('outputs')]\nopen('outputs/secret.txt', 'w').write('s')\nopen('mine.txt', 'w').write('m')\nr",
				"files": map[string]any{"in.txt": "secret"},
			})
			check(t, res, st, expectation{result: `[["in.txt","outputs"],[]]`})
			res, st = s.call(t, "execute_python", "import os\n[sorted(os.listdir('/tmp')), os.listdir('/tmp/outputs')]")
			check(t, res, st, expectation{result: `[["outputs"],[]]`})
			if len(st.Files) != 0 {
				t.Errorf("files %q came back from a call that wrote none", filesOf(st))
			}
			res, st = s.callArgs(t, "execute_javascript", map[string]any{"code": "outputs['x'] = files['in.txt']", "files": map[string]any{"in.txt": "secret"}})
			check(t, res, st, expectation{result: `"secret"`})
			res, st = s.call(t, "execute_javascript", "[typeof files, Object.keys(outputs).length]")
			check(t, res, st, expectation{result: `["undefined",0]`})
		}
	})
}

func TestExecFiles(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "sales.csv")
	if err := os.WriteFile(csv, []byte("region,amount\nnorth,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(capsuleBin, "exec", "python", "--file", csv, "--file", csv+"=in/copy.csv", "--outputs", out,
		"-c", "import shutil, os\nos.makedirs('outputs/d')\nshutil.copy('in/copy.csv', 'outputs/d/c.csv')\n"+pngPython+"open('sales.csv').read().count('\\n')")
	cmd.Env = serverEnv()
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("capsule exec: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "2\n") || !strings.Contains(string(got), "capsule: wrote "+filepath.Join(out, "d/c.csv")) {
		t.Fatalf("output %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(out, "d/c.csv")); err != nil || string(b) != "region,amount\nnorth,10\n" {
		t.Fatalf("d/c.csv: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "chart.png")); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("chart.png: %v", err)
	}
	// A name that breaks a rule is a usage error.
	cmd = exec.Command(capsuleBin, "exec", "python", "--file", csv+"=../x.csv", "-c", "1")
	cmd.Env = serverEnv()
	got, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(got), `file "../x.csv": the path contains ".."`) {
		t.Fatalf("exit %d, output %q", cmd.ProcessState.ExitCode(), got)
	}
}

// TestFilesTypeScriptClient makes the files calls through the MCP
// TypeScript SDK's client, on both transports: what it receives (and
// checks against the output schema) is what an MCP host gets.
func TestFilesTypeScriptClient(t *testing.T) {
	calls := []tsCall{
		{Name: "execute_python", Arguments: map[string]any{
			"code":  pngPython + "import csv\nrows = list(csv.DictReader(open('data.csv')))\nopen('outputs/n.txt', 'w').write(str(len(rows)))\nlen(rows)",
			"files": map[string]any{"data.csv": "a,b\n1,2\n3,4\n"},
		}},
		{Name: "execute_javascript", Arguments: map[string]any{
			"code":  "outputs['r.bin'] = files['in.bin'].slice().reverse(); outputs['t.json'] = JSON.stringify({n: files['in.bin'].length})",
			"files": map[string]any{"in.bin": map[string]any{"base64": "AQID"}},
		}},
		{Name: "execute_python", Arguments: map[string]any{"code": "1", "files": map[string]any{"../x": "y"}}},
		{Name: "execute_python", Arguments: map[string]any{"code": "for i in range(5):\n    open('outputs/%d.txt' % i, 'w').write('x')"}},
	}
	checkAll := func(t *testing.T, r []tsResult) {
		if r[0].IsError || len(r[0].Content) != 3 || r[0].Content[1].Type != "image" || r[0].Content[1].MIMEType != "image/png" ||
			r[0].Content[2].Type != "resource" || r[0].Content[2].Resource.Text != "2" || r[0].Content[2].Resource.URI != "file:///tmp/outputs/n.txt" {
			t.Errorf("python round trip: %+v", r[0])
		}
		if r[1].IsError || len(r[1].Content) != 3 || r[1].Content[1].Resource.Blob != "AwIB" || r[1].Content[1].Resource.MIMEType != "application/octet-stream" ||
			r[1].Content[2].Resource.Text != `{"n":3}` || r[1].Content[2].Resource.MIMEType != "application/json" {
			t.Errorf("javascript round trip: %+v", r[1])
		}
		if !r[2].IsError || len(r[2].Content) != 1 || !strings.Contains(r[2].Content[0].Text, `file "../x": the path contains ".."`) {
			t.Errorf("refused path: %+v", r[2])
		}
		var st structured
		if err := json.Unmarshal(r[3].StructuredContent, &st); err != nil || !r[3].IsError || st.Limit == nil || *st.Limit != "files_out" ||
			len(st.Files) != 5 || !st.Files[4].Truncated || len(r[3].Content) != 5 {
			t.Errorf("files_out: %+v (%v)", r[3], err)
		}
		for i, res := range r {
			if res.Error != "" {
				t.Errorf("call %d: the client failed: %s", i, res.Error)
			}
		}
	}
	t.Run("stdio", func(t *testing.T) {
		checkAll(t, runTSClient(t, tsStdio(nil, filesFlags...), calls))
	})
	t.Run("http", func(t *testing.T) {
		s := startHTTPServer(t, nil, filesFlags...)
		checkAll(t, runTSClient(t, map[string]any{"transport": "http", "url": s.base + "/mcp"}, calls))
	})
}

// TestFilesHonest is issue 32's honest names and types end to end: a text
// file named .png comes back as bytes of a type that claims no image, a
// real PNG named .dat as an image, and an output whose name holds a bidi
// control is not returned, with an error naming the rule.
func TestFilesHonest(t *testing.T) {
	s := startServer(t, filesFlags...)
	res, st := s.call(t, "execute_python", pngPython+`import os
os.rename('outputs/chart.png', 'outputs/chart.dat')
open('outputs/fake.png', 'w').write('not a png')
open('outputs/inv\u202etxt.exe', 'w').write('x')`)
	if got, want := filesOf(st), "chart.dat:73:image/png fake.png:9:application/octet-stream"; got != want {
		t.Errorf("files %q, want %q", got, want)
	}
	if st.Error == nil || !strings.Contains(st.Error.Message, `file "inv\u202etxt.exe": the path contains a bidirectional control character (U+202E)`) {
		t.Errorf("error %+v, want one naming the bidi control", st.Error)
	}
	var kinds []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.ImageContent:
			kinds = append(kinds, "image "+c.MIMEType)
		case mcp.EmbeddedResource:
			if b, ok := c.Resource.(mcp.BlobResourceContents); ok {
				kinds = append(kinds, "blob "+b.MIMEType)
			}
		}
	}
	if got := strings.Join(kinds, ", "); got != "image image/png, blob application/octet-stream" {
		t.Errorf("contents %s", got)
	}
}
