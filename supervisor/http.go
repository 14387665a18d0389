package supervisor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/server"
)

// AuthTokenEnv is the environment variable that holds the bearer token. The
// token has no flag: a command line is readable by every user of the host
// (/proc/PID/cmdline), an environment is not.
const AuthTokenEnv = "CAPSULE_AUTH_TOKEN"

// MCPPath is where the Streamable HTTP transport serves MCP.
const MCPPath = "/mcp"

// Timeouts of the HTTP server. There is deliberately no WriteTimeout and no
// ReadTimeout: a call legitimately runs up to --max-timeout after waiting
// its turn, and its limits are the supervisor's to enforce. (A ReadTimeout
// would also cancel a long call's context once it expired in net/http's
// background read.) The body has its own deadline instead.
const (
	readHeaderTimeout = 10 * time.Second
	readBodyTimeout   = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
)

// ServeOptions say how `capsule serve` exposes the supervisor: on stdio, or
// over Streamable HTTP with the checks an exposed server needs.
type ServeOptions struct {
	// HTTP is the address to serve MCP over HTTP on; empty means stdio.
	// Resolve turns a bare port into a loopback address.
	HTTP string
	// AuthTokenFile names a file holding the bearer token.
	AuthTokenFile string
	// AuthToken is the bearer token every request must carry; empty means
	// none. Resolve fills it from AuthTokenEnv or AuthTokenFile. It is
	// never logged.
	AuthToken string
	// AllowOrigins are the browser origins allowed besides loopback ones:
	// normalised scheme://host[:port], or "*" for any.
	AllowOrigins []string
	// MaxRequestBody bounds a request body; 0 means the default, which
	// Resolve derives from the code limit.
	MaxRequestBody Size
	// MaxClientConcurrency bounds the requests one client has in flight;
	// 0 means the default, which Resolve derives from MaxConcurrency.
	MaxClientConcurrency int
	// TrustProxyHeaders takes the client's address from X-Forwarded-For.
	TrustProxyHeaders bool
	// ShutdownGrace is how long running calls may take to finish after
	// SIGTERM or SIGINT before their workers are killed.
	ShutdownGrace time.Duration
}

// DefaultServeOptions are the options when no flag or variable is set.
func DefaultServeOptions() ServeOptions {
	return ServeOptions{ShutdownGrace: 10 * time.Second}
}

// RegisterFlags defines serve's transport flags, with their environment
// variables, on e.
func (o *ServeOptions) RegisterFlags(e *EnvFlags) {
	e.Var(StringValue{&o.HTTP}, "http", "CAPSULE_HTTP",
		"serve MCP over Streamable HTTP at "+MCPPath+" on this address (host:port; a bare port or :port binds 127.0.0.1) instead of stdio")
	e.Var(StringValue{&o.AuthTokenFile}, "auth-token-file", "CAPSULE_AUTH_TOKEN_FILE",
		"file holding the bearer token HTTP clients must send (or set "+AuthTokenEnv+")")
	e.Var(originsValue{&o.AllowOrigins}, "allow-origin", "CAPSULE_ALLOW_ORIGIN",
		"also accept HTTP requests from this browser origin, scheme://host[:port] or *; repeatable, comma-separated (loopback origins are always accepted)")
	e.Var(autoSize{&o.MaxRequestBody}, "max-request-body", "CAPSULE_MAX_REQUEST_BODY",
		"limit on an HTTP request's body (larger ones get 413) and on a stdio message (larger ones get a JSON-RPC error)")
	e.Var(autoInt{&o.MaxClientConcurrency}, "max-client-concurrency", "CAPSULE_MAX_CLIENT_CONCURRENCY",
		"HTTP requests one client (remote IP) may have in flight; more get 429")
	e.Var(boolValue{&o.TrustProxyHeaders}, "trust-proxy-headers", "CAPSULE_TRUST_PROXY_HEADERS",
		"identify HTTP clients by X-Forwarded-For's first address (only behind a proxy that sets it)")
	e.Var(durationValue{&o.ShutdownGrace}, "shutdown-grace", "CAPSULE_SHUTDOWN_GRACE",
		"on SIGTERM or SIGINT, how long running calls may take to finish before their workers are killed")
}

// Resolve completes the options after parsing: it applies the defaults
// that depend on cfg, turns a bare port into a loopback address, and reads
// the token. It only reads the token for HTTP, where it is used.
func (o *ServeOptions) Resolve(cfg Config) error {
	if o.MaxRequestBody == 0 {
		o.MaxRequestBody = DefaultMaxRequestBody(cfg.Limits)
	}
	if o.MaxClientConcurrency == 0 {
		o.MaxClientConcurrency = 2 * cfg.MaxConcurrency
	}
	if o.HTTP == "" {
		return nil
	}
	addr, err := normalizeAddr(o.HTTP)
	if err != nil {
		return err
	}
	o.HTTP = addr
	env, envSet := os.LookupEnv(AuthTokenEnv)
	switch {
	case envSet && o.AuthTokenFile != "":
		return fmt.Errorf("both %s and --auth-token-file are set: use one", AuthTokenEnv)
	case envSet:
		o.AuthToken, err = checkToken(env, AuthTokenEnv)
	case o.AuthTokenFile != "":
		var b []byte
		if b, err = os.ReadFile(o.AuthTokenFile); err != nil {
			return fmt.Errorf("reading the auth token: %w", err)
		}
		o.AuthToken, err = checkToken(string(b), o.AuthTokenFile)
	}
	return err
}

// DefaultMaxRequestBody is the body limit when none is set: room for the
// code and the inputs, each bounded by MaxCode, and the files passed in as
// base64 (4 bytes for every 3), plus 1MiB for JSON escaping and the
// JSON-RPC envelope, so that a call the supervisor would take is not
// refused by the transport.
func DefaultMaxRequestBody(l Limits) Size { return 2*l.MaxCode + (l.MaxFilesIn+2)/3*4 + 1<<20 }

// checkToken trims the trailing newline a file or a secret usually carries
// and refuses a token that would turn authentication off or could never
// match a header.
func checkToken(tok, from string) (string, error) {
	tok = strings.TrimRight(tok, "\r\n")
	if tok == "" {
		return "", fmt.Errorf("the auth token in %s is empty: refusing to serve with authentication silently off", from)
	}
	if strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", fmt.Errorf("the auth token in %s contains whitespace or control characters, which a Bearer header cannot carry", from)
	}
	return tok, nil
}

// normalizeAddr turns "8080" and ":8080" into 127.0.0.1:8080, so that
// giving only a port never exposes the server beyond this host.
func normalizeAddr(addr string) (string, error) {
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("invalid --http address %q: want host:port, :port or port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("invalid --http address %q: the port must be a number from 0 to 65535", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// CheckExposure refuses to serve without a token on an address other hosts
// can reach. It looks at the address actually bound, so a host name that
// resolves beyond loopback is caught as well.
func (o *ServeOptions) CheckExposure(bound net.Addr) error {
	if o.AuthToken != "" {
		return nil
	}
	if ap, err := netip.ParseAddrPort(bound.String()); err == nil && ap.Addr().IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to serve on %s (bound as %s) without authentication: it is not a loopback address, "+
		"so other hosts could run code here. Set %s or --auth-token-file, or bind 127.0.0.1", o.HTTP, bound, AuthTokenEnv)
}

// NewHTTPServer returns the HTTP server for s: MCP over Streamable HTTP at
// MCPPath behind the checks of o, and the /healthz and /readyz probes.
//
// The transport is stateless (no session survives a request), so replicas
// can sit behind any load balancer without sticky sessions; capsule's tools
// keep nothing between calls anyway. The standalone GET stream is off: in
// stateless mode there is nothing to push on it, and long-lived streams
// would only hold connections and per-client slots, and delay shutdown.
//
// mcp-go's own DNS-rebinding defence (a Host check on loopback connections)
// is turned off in favour of the Origin check here, which is what the MCP
// specification prescribes. Theirs would refuse every request a reverse
// proxy or a sidecar forwards over loopback with a Host other than
// localhost (nginx sends the upstream's name by default), the deployments
// docs/deploy.md describes; ours still refuses any browser
// request from a foreign origin, which is every request a rebinding attack
// can make that reaches a tool (browsers send Origin on every POST).
func NewHTTPServer(s *Supervisor, o ServeOptions, log hclog.Logger) *http.Server {
	streamable := server.NewStreamableHTTPServer(NewMCPServer(s),
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(slog.New(slogHandler{log: log.Named("http")})),
	)
	return &http.Server{
		Handler:           o.handler(streamable, s.Ready, log.Named("http")),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

// handler puts the checks in front of mcp: probes first, which need no
// token so that orchestrators can call them; then, for everything else,
// Origin, token, the per-client limit and the body limit, in that order, so
// that a request refused for who sent it costs nothing, and every admitted
// request holds its client's slot while its body is read.
func (o *ServeOptions) handler(mcp http.Handler, ready func() bool, log hclog.Logger) http.Handler {
	var want [sha256.Size]byte
	if o.AuthToken != "" {
		want = sha256.Sum256([]byte(o.AuthToken))
	}
	limits := &clientLimiter{max: o.MaxClientConcurrency, n: map[string]int{}}
	calls := newCallRegistry()
	checked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := o.clientKey(r)
		origin := r.Header.Get("Origin")
		if origin != "" && !o.originAllowed(origin) {
			log.Debug("refused: origin not allowed", "client", client, "origin", origin)
			writeError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed (see --allow-origin)", origin))
			return
		}
		if origin != "" {
			allowCORS(w, origin)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				// A preflight carries no credentials; what it asks is
				// whether the real request may be sent at all.
				preflight(w)
				return
			}
		}
		if o.AuthToken != "" && !tokenMatches(r.Header.Get("Authorization"), &want) {
			log.Debug("refused: missing or wrong bearer token", "client", client, "path", r.URL.Path)
			w.Header().Set("WWW-Authenticate", `Bearer realm="capsule"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		if !limits.acquire(client) {
			log.Debug("refused: client over its concurrency limit", "client", client, "limit", limits.max)
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
				"server busy: this client already has %d requests in flight, the most it may have; retry shortly", limits.max))
			return
		}
		defer limits.release(client)
		body, ok := o.limitBody(w, r)
		if !ok {
			log.Debug("refused: request body too large", "client", client, "limit", o.MaxRequestBody)
			return
		}
		calls.serve(mcp, w, r, body)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			io.WriteString(w, "ok\n")
		case "/readyz":
			if !ready() {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			io.WriteString(w, "ready\n")
		case MCPPath:
			checked.ServeHTTP(w, r)
		default:
			// Unknown paths, the OAuth discovery and registration ones
			// included, are not there: an OAuth-aware client then reports
			// that /mcp wants a bearer token instead of a failed
			// registration.
			writeError(w, http.StatusNotFound, fmt.Sprintf("no such path %q: capsule serves MCP at %s", r.URL.Path, MCPPath))
		}
	})
}

// CORS for allowed origins: what a browser-based client needs to call
// /mcp and read the session id and the auth challenge.
const (
	corsAllowMethods  = "GET, POST, DELETE, OPTIONS"
	corsAllowHeaders  = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
	corsExposeHeaders = "Mcp-Session-Id, WWW-Authenticate"
	corsMaxAge        = "600"
)

// allowCORS marks a response to an allowed origin as readable by it.
func allowCORS(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
}

// preflight answers a CORS preflight from an allowed origin.
func preflight(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

// writeError answers a refused request with a JSON-RPC-shaped error, so a
// client that prints the body shows why.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(httpError{JSONRPC: "2.0", Error: httpErrorBody{Code: -32000, Message: msg}})
}

// httpError is the body of a refused request: a JSON-RPC error with a null
// id, since the request was not read.
type httpError struct {
	JSONRPC string        `json:"jsonrpc"`
	ID      *int          `json:"id"`
	Error   httpErrorBody `json:"error"`
}

type httpErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// tokenMatches checks an Authorization header against the token's digest.
// Comparing digests in constant time leaks neither the token's bytes nor
// its length through timing.
func tokenMatches(header string, want *[sha256.Size]byte) bool {
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimLeft(cred, " ")))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// loopbackHosts are the origin hosts allowed by default: a page served by
// this machine is as trusted as a process on it.
var loopbackHosts = map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}

// originAllowed reports whether a browser origin may call: a loopback one,
// or one given with --allow-origin. "null" (sandboxed frames, file: pages)
// is never allowed except by "*".
func (o *ServeOptions) originAllowed(origin string) bool {
	for _, a := range o.AllowOrigins {
		if a == "*" {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	if loopbackHosts[strings.ToLower(u.Hostname())] {
		return true
	}
	norm, err := normalizeOrigin(origin)
	if err != nil {
		return false
	}
	for _, a := range o.AllowOrigins {
		if a == norm {
			return true
		}
	}
	return false
}

// normalizeOrigin reduces an origin to lower-case scheme://host[:port]
// without a default port, the form browsers send, so that the allow list
// and the header compare equal when they name the same origin.
func normalizeOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("invalid origin %q: want scheme://host[:port] with scheme http or https, or *", s)
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// clientKey names the client a request counts against: its IP address, or
// with TrustProxyHeaders the first address of X-Forwarded-For (the client
// as the first proxy saw it). An IPv6 client is its /64, since one host
// usually holds a whole /64 and could otherwise dodge the limit.
func (o *ServeOptions) clientKey(r *http.Request) string {
	if o.TrustProxyHeaders {
		if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
			first, _, _ := strings.Cut(xff, ",")
			if a, ok := parseIP(strings.TrimSpace(first)); ok {
				return ipKey(a)
			}
		}
	}
	if a, ok := parseIP(r.RemoteAddr); ok {
		return ipKey(a)
	}
	return r.RemoteAddr
}

// parseIP reads an address written with or without a port.
func parseIP(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

func ipKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.WithZone("").Prefix(64)
		return p.String()
	}
	return a.String()
}

// clientLimiter counts each client's requests in flight.
type clientLimiter struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func (l *clientLimiter) acquire(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[client] >= l.max {
		return false
	}
	l.n[client]++
	return true
}

func (l *clientLimiter) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[client]--; l.n[client] <= 0 {
		delete(l.n, client) // the map holds only clients with requests in flight
	}
}

// limitBody enforces MaxRequestBody, answering 413 and reporting false when
// the body is over it. A POST body is read here, under its own deadline, so
// that a body that is too large is answered 413 however it is framed (the
// transport would read it all anyway), and returned; other bodies are only
// capped.
func (o *ServeOptions) limitBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := int64(o.MaxRequestBody)
	tooLarge := func() ([]byte, bool) {
		w.Header().Set("Connection", "close") // do not read the rest
		writeError(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the request body is over the %s limit (see --max-request-body)", o.MaxRequestBody))
		return nil, false
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if r.Method != http.MethodPost {
		return nil, true
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(readBodyTimeout)) // unsupported only in tests' recorders
	body, err := io.ReadAll(r.Body)
	_ = rc.SetReadDeadline(time.Time{})
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return tooLarge()
	case err != nil:
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, true
}

// originsValue is a flag.Value for a list of allowed origins, given
// repeatedly or comma-separated.
type originsValue struct{ list *[]string }

func (v originsValue) String() string {
	if v.list == nil {
		return ""
	}
	return strings.Join(*v.list, ",")
}

func (v originsValue) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if part == "*" {
			*v.list = append(*v.list, part)
			continue
		}
		norm, err := normalizeOrigin(part)
		if err != nil {
			return err
		}
		*v.list = append(*v.list, norm)
	}
	return nil
}

// autoSize is a Size flag whose zero value means "derived after parsing",
// and says so in the help.
type autoSize struct{ s *Size }

func (v autoSize) String() string {
	switch {
	case v.s == nil:
		return "" // the flag package's zero value, so the default below is shown
	case *v.s == 0:
		return "2 × max-code + 4/3 × max-files-in + 1MiB"
	}
	return v.s.String()
}

func (v autoSize) Set(s string) error {
	n, err := ParseSize(s)
	if err == nil && n == 0 {
		err = fmt.Errorf("invalid size %q: want more than 0", s)
	}
	if err != nil {
		return err
	}
	*v.s = n
	return nil
}

// autoInt is a count flag whose zero value means "derived after parsing",
// and says so in the help.
type autoInt struct{ n *int }

func (v autoInt) String() string {
	switch {
	case v.n == nil:
		return "" // the flag package's zero value, so the default below is shown
	case *v.n == 0:
		return "2 × max-concurrency"
	}
	return strconv.Itoa(*v.n)
}

func (v autoInt) Set(s string) error { return intValue{v.n, 1}.Set(s) }

// slogHandler sends mcp-go's transport logs to our logger, so they share
// its format and level. mcp-go logs routine events at Info (a refused GET,
// say), which are debug detail for us.
type slogHandler struct {
	log    hclog.Logger
	attrs  []any
	prefix string
}

func (h slogHandler) level(l slog.Level) hclog.Level {
	switch {
	case l >= slog.LevelError:
		return hclog.Error
	case l >= slog.LevelWarn:
		return hclog.Warn
	}
	return hclog.Debug
}

// Enabled implements slog.Handler.
func (h slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= h.level(l)
}

// Handle implements slog.Handler.
func (h slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.prefix+a.Key, a.Value.Resolve().Any())
		return true
	})
	h.log.Log(h.level(r.Level), r.Message, args...)
	return nil
}

// WithAttrs implements slog.Handler.
func (h slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append([]any(nil), h.attrs...)
	for _, a := range attrs {
		h.attrs = append(h.attrs, h.prefix+a.Key, a.Value.Resolve().Any())
	}
	return h
}

// WithGroup implements slog.Handler.
func (h slogHandler) WithGroup(name string) slog.Handler {
	if name != "" {
		h.prefix += name + "."
	}
	return h
}
