package transport

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/server"
)

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

// NewHTTPServer returns the HTTP server for mcpServer: MCP over Streamable
// HTTP at MCPPath behind the checks of o, and the /healthz and /readyz
// probes; ready says whether the server should be sent calls.
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
func NewHTTPServer(mcpServer *server.MCPServer, ready func() bool, o ServeOptions, log hclog.Logger) *http.Server {
	streamable := server.NewStreamableHTTPServer(mcpServer,
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(slog.New(slogHandler{log: log.Named("http")})),
	)
	return &http.Server{
		Handler:           o.handler(streamable, ready, log.Named("http")),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

// gate is the HTTP handler: the probes, and the checks in front of MCP.
type gate struct {
	o      *ServeOptions
	mcp    http.Handler
	ready  func() bool
	log    hclog.Logger
	want   [sha256.Size]byte // the token's digest, when there is a token
	limits *clientLimiter
	calls  *callRegistry
}

// handler puts the checks in front of mcp: probes first, which need no
// token so that orchestrators can call them; then, for everything else,
// Origin, token, the per-client limit and the body limit, in that order, so
// that a request refused for who sent it costs nothing, and every admitted
// request holds its client's slot while its body is read.
func (o *ServeOptions) handler(mcp http.Handler, ready func() bool, log hclog.Logger) http.Handler {
	g := &gate{o: o, mcp: mcp, ready: ready, log: log,
		limits: &clientLimiter{max: o.MaxClientConcurrency, n: map[string]int{}},
		calls:  newCallRegistry(),
	}
	if o.AuthToken != "" {
		g.want = sha256.Sum256([]byte(o.AuthToken))
	}
	return g
}

// ServeHTTP routes a request by its path.
func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		io.WriteString(w, "ok\n")
	case "/readyz":
		if !g.ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	case MCPPath:
		g.serveMCP(w, r)
	default:
		// Unknown paths, the OAuth discovery and registration ones
		// included, are not there: an OAuth-aware client then reports
		// that /mcp wants a bearer token instead of a failed
		// registration.
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such path %q: capsule serves MCP at %s", r.URL.Path, MCPPath))
	}
}

// serveMCP runs the checks in order and hands what passes them to MCP.
func (g *gate) serveMCP(w http.ResponseWriter, r *http.Request) {
	client := g.o.clientKey(r)
	if !g.checkOrigin(w, r, client) || !g.checkToken(w, r, client) {
		return
	}
	if !g.limits.acquire(client) {
		g.log.Debug("refused: client over its concurrency limit", "client", client, "limit", g.limits.max)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
			"server busy: this client already has %d requests in flight, the most it may have; retry shortly", g.limits.max))
		return
	}
	defer g.limits.release(client)
	body, ok := g.o.limitBody(w, r)
	if !ok {
		g.log.Debug("refused: request body too large", "client", client, "limit", g.o.MaxRequestBody)
		return
	}
	g.calls.serve(g.mcp, w, r, body)
}

// checkOrigin refuses a browser request from an origin not allowed, and
// answers a preflight from one that is. It reports whether to go on.
func (g *gate) checkOrigin(w http.ResponseWriter, r *http.Request, client string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if !g.o.originAllowed(origin) {
		g.log.Debug("refused: origin not allowed", "client", client, "origin", origin)
		writeError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed (see --allow-origin)", origin))
		return false
	}
	allowCORS(w, origin)
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		// A preflight carries no credentials; what it asks is whether
		// the real request may be sent at all.
		preflight(w)
		return false
	}
	return true
}

// checkToken refuses a request without the bearer token, when there is
// one. It reports whether to go on.
func (g *gate) checkToken(w http.ResponseWriter, r *http.Request, client string) bool {
	if g.o.AuthToken == "" || tokenMatches(r.Header.Get("Authorization"), &g.want) {
		return true
	}
	g.log.Debug("refused: missing or wrong bearer token", "client", client, "path", r.URL.Path)
	w.Header().Set("WWW-Authenticate", `Bearer realm="capsule"`)
	writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
	return false
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
