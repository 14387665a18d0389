package transport

import (
	"capsule/supervisor"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hashicorp/go-hclog"
)

// echoBody is the handler behind the checks in these tests: it answers
// 200 with the body it was given.
var echoBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(b)
})

func testOptions() ServeOptions {
	return ServeOptions{MaxRequestBody: 1 << 20, MaxClientConcurrency: 100}
}

func serveOne(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// checkErrorBody checks that a refusal is the JSON-RPC-shaped error.
func checkErrorBody(t *testing.T, w *httptest.ResponseRecorder, contains string) {
	t.Helper()
	var body httpError
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q is not a JSON-RPC error: %v", w.Body, err)
	}
	if body.JSONRPC != "2.0" || body.ID != nil || !strings.Contains(body.Error.Message, contains) {
		t.Errorf("body = %+v, want a JSON-RPC error mentioning %q", body, contains)
	}
}

func TestHTTPToken(t *testing.T) {
	o := testOptions()
	o.AuthToken = "s3cret-token"
	h := o.handler(echoBody, func() bool { return true }, hclog.NewNullLogger())
	cases := []struct {
		name   string
		path   string
		header string
		status int
	}{
		{"no header", MCPPath, "", http.StatusUnauthorized},
		{"right token", MCPPath, "Bearer s3cret-token", http.StatusOK},
		{"scheme is case-insensitive", MCPPath, "bearer s3cret-token", http.StatusOK},
		{"extra spaces after the scheme", MCPPath, "Bearer   s3cret-token", http.StatusOK},
		{"wrong token", MCPPath, "Bearer s3cret-tokem", http.StatusUnauthorized},
		{"prefix of the token", MCPPath, "Bearer s3cret", http.StatusUnauthorized},
		{"token plus more", MCPPath, "Bearer s3cret-token2", http.StatusUnauthorized},
		{"empty token", MCPPath, "Bearer ", http.StatusUnauthorized},
		{"scheme only", MCPPath, "Bearer", http.StatusUnauthorized},
		{"other scheme", MCPPath, "Basic s3cret-token", http.StatusUnauthorized},
		{"token without scheme", MCPPath, "s3cret-token", http.StatusUnauthorized},
		{"unknown path without token", "/other", "", http.StatusNotFound},
		{"unknown path with token", "/other", "Bearer s3cret-token", http.StatusNotFound},
		{"OAuth metadata is not there", "/.well-known/oauth-authorization-server", "", http.StatusNotFound},
		{"protected resource metadata is not there", "/.well-known/oauth-protected-resource/mcp", "", http.StatusNotFound},
		{"dynamic client registration is not there", "/register", "", http.StatusNotFound},
		{"healthz needs none", "/healthz", "", http.StatusOK},
		{"readyz needs none", "/readyz", "", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader("{}"))
			if c.header != "" {
				r.Header.Set("Authorization", c.header)
			}
			w := serveOne(h, r)
			if w.Code != c.status {
				t.Fatalf("status = %d, want %d; body %q", w.Code, c.status, w.Body)
			}
			if c.status == http.StatusUnauthorized {
				if got := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
				}
				checkErrorBody(t, w, "bearer token")
			}
		})
	}
}

func TestHTTPNoTokenAdmitsAll(t *testing.T) {
	o := testOptions()
	h := o.handler(echoBody, func() bool { return true }, hclog.NewNullLogger())
	r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer anything")
	if w := serveOne(h, r); w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 without a configured token", w.Code)
	}
}

func TestHTTPProbes(t *testing.T) {
	for _, c := range []struct {
		path   string
		ready  bool
		status int
	}{
		{"/healthz", false, http.StatusOK},
		{"/readyz", true, http.StatusOK},
		{"/readyz", false, http.StatusServiceUnavailable},
	} {
		o := testOptions()
		o.AuthToken = "t"
		h := o.handler(echoBody, func() bool { return c.ready }, hclog.NewNullLogger())
		w := serveOne(h, httptest.NewRequest(http.MethodGet, c.path, nil))
		if w.Code != c.status {
			t.Errorf("%s with ready=%v: status = %d, want %d", c.path, c.ready, w.Code, c.status)
		}
	}
}

func TestHTTPOrigin(t *testing.T) {
	cases := []struct {
		name   string
		allow  []string
		origin string
		ok     bool
	}{
		{"no origin (not a browser)", nil, "", true},
		{"localhost any port", nil, "http://localhost:3000", true},
		{"localhost https", nil, "https://localhost", true},
		{"localhost upper case", nil, "http://LOCALHOST:5173", true},
		{"127.0.0.1", nil, "http://127.0.0.1:8080", true},
		{"[::1]", nil, "http://[::1]:8080", true},
		{"foreign origin", nil, "https://evil.example", false},
		{"rebinding name", nil, "http://attacker.example:8080", false},
		{"localhost as a subdomain", nil, "http://localhost.evil.example", false},
		{"other loopback address is not listed", nil, "http://127.0.0.2", false},
		{"null origin", nil, "null", false},
		{"not http", nil, "file://localhost", false},
		{"garbage", nil, "::::", false},
		{"allowed exactly", []string{"https://app.example.com"}, "https://app.example.com", true},
		{"allowed, default port written", []string{"https://app.example.com"}, "https://app.example.com:443", true},
		{"allowed, case differs", []string{"https://app.example.com"}, "https://App.Example.com", true},
		{"allowed list, other port", []string{"https://app.example.com"}, "https://app.example.com:8443", false},
		{"allowed list, other scheme", []string{"https://app.example.com"}, "http://app.example.com", false},
		{"allowed list, other host", []string{"https://app.example.com"}, "https://example.com", false},
		{"star allows any", []string{"*"}, "https://evil.example", true},
		{"star allows null", []string{"*"}, "null", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			for _, a := range c.allow {
				var err error
				if o.AllowOrigins, err = AddOrigins(o.AllowOrigins, a); err != nil {
					t.Fatal(err)
				}
			}
			h := o.handler(echoBody, func() bool { return true }, hclog.NewNullLogger())
			r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader("{}"))
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			w := serveOne(h, r)
			want := http.StatusForbidden
			if c.ok {
				want = http.StatusOK
			}
			if w.Code != want {
				t.Fatalf("status = %d, want %d; body %q", w.Code, want, w.Body)
			}
			if !c.ok {
				checkErrorBody(t, w, "not allowed")
			}
		})
	}
}

func TestHTTPOriginRefusedBeforeToken(t *testing.T) {
	// A foreign page learns nothing about the token check.
	o := testOptions()
	o.AuthToken = "t"
	h := o.handler(echoBody, func() bool { return true }, hclog.NewNullLogger())
	r := httptest.NewRequest(http.MethodPost, MCPPath, nil)
	r.Header.Set("Origin", "https://evil.example")
	if w := serveOne(h, r); w.Code != http.StatusForbidden {
		t.Fatalf("status = %d, want 403", w.Code)
	}
}

func TestAddOrigins(t *testing.T) {
	cases := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "https://a.example", want: "https://a.example"},
		{in: "https://A.example:443/", want: "https://a.example"},
		{in: "http://a.example:80", want: "http://a.example"},
		{in: "http://a.example:8080", want: "http://a.example:8080"},
		{in: "http://[::1]:8080", want: "http://[::1]:8080"},
		{in: "https://a.example, http://b.example:3000", want: "https://a.example,http://b.example:3000"},
		{in: "*", want: "*"},
		{in: "a.example", wantErr: true},
		{in: "ftp://a.example", wantErr: true},
		{in: "https://a.example/path", wantErr: true},
		{in: "https://a.example?q", wantErr: true},
		{in: "https://user@a.example", wantErr: true},
	}
	for _, c := range cases {
		list, err := AddOrigins(nil, c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("AddOrigins(%q): error %v, want error %v", c.in, err, c.wantErr)
			continue
		}
		if got := strings.Join(list, ","); !c.wantErr && got != c.want {
			t.Errorf("AddOrigins(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	const limit = 1 << 10
	cases := []struct {
		name    string
		size    int
		chunked bool // no Content-Length, so only reading finds the size
		status  int
	}{
		{"under", limit - 1, false, http.StatusOK},
		{"at the limit", limit, false, http.StatusOK},
		{"over, by Content-Length", limit + 1, false, http.StatusRequestEntityTooLarge},
		{"far over, by Content-Length", 10 * limit, false, http.StatusRequestEntityTooLarge},
		{"chunked under", limit, true, http.StatusOK},
		{"chunked over", limit + 1, true, http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			o.MaxRequestBody = limit
			h := o.handler(echoBody, func() bool { return true }, hclog.NewNullLogger())
			body := strings.Repeat("x", c.size)
			var rd io.Reader = strings.NewReader(body)
			if c.chunked {
				rd = iotest.HalfReader(rd) // hides the length from NewRequest
			}
			r := httptest.NewRequest(http.MethodPost, MCPPath, rd)
			if c.chunked && r.ContentLength != -1 {
				r.ContentLength = -1
			}
			w := serveOne(h, r)
			if w.Code != c.status {
				t.Fatalf("status = %d, want %d", w.Code, c.status)
			}
			if c.status == http.StatusOK && w.Body.String() != body {
				t.Errorf("the handler got %d bytes, want %d", w.Body.Len(), len(body))
			}
			if c.status == http.StatusRequestEntityTooLarge {
				checkErrorBody(t, w, "1KiB")
			}
		})
	}
}

func TestHTTPBodyReadError(t *testing.T) {
	o := testOptions()
	h := o.handler(echoBody, func() bool { return true }, hclog.NewNullLogger())
	r := httptest.NewRequest(http.MethodPost, MCPPath, iotest.ErrReader(io.ErrUnexpectedEOF))
	if w := serveOne(h, r); w.Code != http.StatusBadRequest {
		t.Fatalf("status = %d, want 400", w.Code)
	}
}

func TestHTTPClientLimit(t *testing.T) {
	const limit = 2
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	})
	cases := []struct {
		name   string
		trust  bool
		remote string
		xff    string
		status int // with `limit` requests of 192.0.2.1 in flight
	}{
		{"same client", false, "192.0.2.1:4000", "", http.StatusTooManyRequests},
		{"same client, other port", false, "192.0.2.1:5000", "", http.StatusTooManyRequests},
		{"other client", false, "192.0.2.2:4000", "", http.StatusOK},
		{"forwarded header ignored when untrusted", false, "192.0.2.1:4000", "198.51.100.7", http.StatusTooManyRequests},
		{"trusted header names another client", true, "192.0.2.1:4000", "198.51.100.7, 192.0.2.1", http.StatusOK},
		{"trusted header names the same client", true, "203.0.113.9:4000", "192.0.2.1", http.StatusTooManyRequests},
		{"trusted header garbage falls back to the peer", true, "192.0.2.1:4000", "unknown", http.StatusTooManyRequests},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			o.MaxClientConcurrency = limit
			o.TrustProxyHeaders = c.trust
			h := o.handler(blocking, func() bool { return true }, hclog.NewNullLogger())
			done := make(chan int, limit+1)
			send := func(remote, xff string) {
				r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader("{}"))
				r.RemoteAddr = remote
				if xff != "" {
					r.Header.Set("X-Forwarded-For", xff)
				}
				done <- serveOne(h, r).Code
			}
			for range limit {
				go send("192.0.2.1:1234", "")
				<-entered
			}
			r := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader("{}"))
			r.RemoteAddr = c.remote
			if c.xff != "" {
				r.Header.Set("X-Forwarded-For", c.xff)
			}
			var w *httptest.ResponseRecorder
			if c.status == http.StatusOK {
				go send(c.remote, c.xff)
				<-entered // admitted: it reached the handler
			} else {
				w = serveOne(h, r)
				if w.Code != c.status {
					t.Errorf("status = %d, want %d", w.Code, c.status)
				}
				if w.Header().Get("Retry-After") == "" {
					t.Error("no Retry-After on 429")
				}
				checkErrorBody(t, w, "retry")
			}
			for range limit {
				release <- struct{}{}
			}
			if c.status == http.StatusOK {
				release <- struct{}{}
			}
			for range cap(done) - 1 {
				if code := <-done; code != http.StatusOK {
					t.Errorf("an admitted request got %d", code)
				}
			}
			if c.status == http.StatusOK {
				<-done
			}
			// Slots are given back: the client is admitted again.
			go send("192.0.2.1:1234", "")
			<-entered
			release <- struct{}{}
			if code := <-done; code != http.StatusOK {
				t.Errorf("after release: status %d, want 200", code)
			}
		})
	}
}

func TestClientKey(t *testing.T) {
	cases := []struct {
		remote, xff string
		trust       bool
		want        string
	}{
		{"192.0.2.1:80", "", false, "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:80", "", false, "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:80", "", false, "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.1]:80", "", false, "192.0.2.1"},
		{"[fe80::1%eth0]:80", "", false, "fe80::/64"},
		{"192.0.2.1:80", "198.51.100.7", false, "192.0.2.1"},
		{"192.0.2.1:80", "198.51.100.7", true, "198.51.100.7"},
		{"192.0.2.1:80", " 198.51.100.7 , 10.0.0.1", true, "198.51.100.7"},
		{"192.0.2.1:80", "198.51.100.7:5555", true, "198.51.100.7"},
		{"192.0.2.1:80", "[2001:db8::1]:5555", true, "2001:db8::/64"},
		{"192.0.2.1:80", "", true, "192.0.2.1"},
		{"192.0.2.1:80", "not-an-ip", true, "192.0.2.1"},
		{"@pipe", "", false, "@pipe"},
	}
	for _, c := range cases {
		o := ServeOptions{TrustProxyHeaders: c.trust}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := o.clientKey(r); got != c.want {
			t.Errorf("clientKey(%q, XFF %q, trust %v) = %q, want %q", c.remote, c.xff, c.trust, got, c.want)
		}
	}
}

func TestNormalizeAddr(t *testing.T) {
	cases := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "8080", want: "127.0.0.1:8080"},
		{in: ":8080", want: "127.0.0.1:8080"},
		{in: "0", want: "127.0.0.1:0"},
		{in: "127.0.0.1:9000", want: "127.0.0.1:9000"},
		{in: "0.0.0.0:8080", want: "0.0.0.0:8080"},
		{in: "[::1]:8080", want: "[::1]:8080"},
		{in: "localhost:8080", want: "localhost:8080"},
		{in: "host", wantErr: true},
		{in: "127.0.0.1:http", wantErr: true},
		{in: "127.0.0.1:70000", wantErr: true},
		{in: "::1", wantErr: true},
	}
	for _, c := range cases {
		got, err := normalizeAddr(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("normalizeAddr(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

func TestResolveToken(t *testing.T) {
	dir := t.TempDir()
	file := func(content string) string {
		f, err := os.CreateTemp(dir, "token")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(content); err != nil {
			t.Fatal(err)
		}
		return f.Name()
	}
	cases := []struct {
		name    string
		env     *string
		file    string
		http    string
		want    string
		wantErr string
	}{
		{name: "none", http: "8080"},
		{name: "env", env: strPtr("abc"), http: "8080", want: "abc"},
		{name: "env with newline", env: strPtr("abc\n"), http: "8080", want: "abc"},
		{name: "env empty", env: strPtr(""), http: "8080", wantErr: "empty"},
		{name: "env only newline", env: strPtr("\n"), http: "8080", wantErr: "empty"},
		{name: "file", file: file("from-file\n"), http: "8080", want: "from-file"},
		{name: "file with CRLF", file: file("from-file-2\r\n"), http: "8080", want: "from-file-2"},
		{name: "file empty", file: file(""), http: "8080", wantErr: "empty"},
		{name: "file missing", file: filepath.Join(dir, "missing"), http: "8080", wantErr: "reading"},
		{name: "both", env: strPtr("abc"), file: file("x\n"), http: "8080", wantErr: "both"},
		{name: "inner space", env: strPtr("a b"), http: "8080", wantErr: "whitespace"},
		{name: "stdio ignores it", env: strPtr("")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != nil {
				t.Setenv(AuthTokenEnv, *c.env)
			} else {
				t.Setenv(AuthTokenEnv, "")
				os.Unsetenv(AuthTokenEnv)
			}
			o := DefaultServeOptions()
			o.HTTP, o.AuthTokenFile = c.http, c.file
			err := o.Resolve(supervisor.DefaultConfig(nil))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.AuthToken != c.want {
				t.Errorf("token = %q, want %q", o.AuthToken, c.want)
			}
		})
	}
}

func TestResolveDefaults(t *testing.T) {
	cfg := supervisor.DefaultConfig(nil)
	cfg.MaxConcurrency = 3
	cfg.Limits.MaxCode = 2 << 20
	o := DefaultServeOptions()
	if err := o.Resolve(cfg); err != nil {
		t.Fatal(err)
	}
	if o.MaxClientConcurrency != 6 {
		t.Errorf("MaxClientConcurrency = %d, want 2 × 3", o.MaxClientConcurrency)
	}
	if want := supervisor.Size(11<<20 + (8<<20+2)/3*4); o.MaxRequestBody != want {
		t.Errorf("MaxRequestBody = %s, want 5 × 2MiB + 4/3 × 8MiB + 1MiB = %s", o.MaxRequestBody, want)
	}
	if o.ShutdownGrace != 10*time.Second {
		t.Errorf("ShutdownGrace = %v, want 10s", o.ShutdownGrace)
	}
	o = ServeOptions{MaxRequestBody: 100, MaxClientConcurrency: 1}
	if err := o.Resolve(cfg); err != nil {
		t.Fatal(err)
	}
	if o.MaxRequestBody != 100 || o.MaxClientConcurrency != 1 {
		t.Errorf("given values were replaced: %+v", o)
	}
}

func TestCheckExposure(t *testing.T) {
	cases := []struct {
		addr  string
		token string
		ok    bool
	}{
		{"127.0.0.1:8080", "", true},
		{"127.0.0.5:8080", "", true},
		{"[::1]:8080", "", true},
		{"0.0.0.0:8080", "", false},
		{"[::]:8080", "", false},
		{"192.0.2.1:8080", "", false},
		{"0.0.0.0:8080", "t", true},
		{"192.0.2.1:8080", "t", true},
	}
	for _, c := range cases {
		o := ServeOptions{AuthToken: c.token}
		addr, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		err = o.CheckExposure(addr)
		if (err == nil) != c.ok {
			t.Errorf("CheckExposure(%s, token %v) = %v, want ok %v", c.addr, c.token != "", err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), AuthTokenEnv) {
			t.Errorf("the refusal %q does not say how to fix it", err)
		}
	}
}

func strPtr(s string) *string { return &s }

func TestSlogHandler(t *testing.T) {
	cases := []struct {
		name   string
		level  hclog.Level
		log    func(*slog.Logger)
		want   string // substring of the output; empty: nothing logged
		absent string
	}{
		{"error passes", hclog.Info, func(l *slog.Logger) { l.Error("boom", "k", 1) }, "[ERROR] http: boom: k=1", ""},
		{"warn passes", hclog.Info, func(l *slog.Logger) { l.Warn("careful") }, "[WARN]  http: careful", ""},
		{"info is debug detail", hclog.Info, func(l *slog.Logger) { l.Info("routine") }, "", "routine"},
		{"info shown at debug", hclog.Debug, func(l *slog.Logger) { l.Info("routine") }, "[DEBUG] http: routine", ""},
		{"attrs and groups", hclog.Info, func(l *slog.Logger) {
			l.With("session", "s1").WithGroup("req").Error("failed", "id", 7)
		}, "session=s1 req.id=7", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf strings.Builder
			log := hclog.New(&hclog.LoggerOptions{Name: "http", Level: c.level, Output: &buf})
			c.log(slog.New(slogHandler{log: log}))
			out := buf.String()
			if c.want == "" && out != "" {
				t.Errorf("logged %q, want nothing", out)
			}
			if !strings.Contains(out, c.want) || (c.absent != "" && strings.Contains(out, c.absent)) {
				t.Errorf("logged %q, want %q", out, c.want)
			}
		})
	}
}
