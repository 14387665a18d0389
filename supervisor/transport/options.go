package transport

import (
	"capsule/supervisor"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// AuthTokenEnv is the environment variable that holds the bearer token. The
// token has no flag: a command line is readable by every user of the host
// (/proc/PID/cmdline), an environment is not.
const AuthTokenEnv = "CAPSULE_AUTH_TOKEN"

// MCPPath is where the Streamable HTTP transport serves MCP.
const MCPPath = "/mcp"

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
	MaxRequestBody supervisor.Size
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
func (o *ServeOptions) RegisterFlags(e *supervisor.EnvFlags) {
	e.Var(supervisor.StringValue{S: &o.HTTP}, "http", "CAPSULE_HTTP",
		"serve MCP over Streamable HTTP at "+MCPPath+" on this address (host:port; a bare port or :port binds 127.0.0.1) instead of stdio")
	e.Var(supervisor.StringValue{S: &o.AuthTokenFile}, "auth-token-file", "CAPSULE_AUTH_TOKEN_FILE",
		"file holding the bearer token HTTP clients must send (or set "+AuthTokenEnv+")")
	e.Var(originsValue{&o.AllowOrigins}, "allow-origin", "CAPSULE_ALLOW_ORIGIN",
		"also accept HTTP requests from this browser origin, scheme://host[:port] or *; repeatable, comma-separated (loopback origins are always accepted)")
	e.Var(autoSize{&o.MaxRequestBody}, "max-request-body", "CAPSULE_MAX_REQUEST_BODY",
		"limit on an HTTP request's body (larger ones get 413) and on a stdio message (larger ones get a JSON-RPC error)")
	e.Var(autoInt{&o.MaxClientConcurrency}, "max-client-concurrency", "CAPSULE_MAX_CLIENT_CONCURRENCY",
		"HTTP requests one client (remote IP) may have in flight; more get 429")
	e.Var(supervisor.BoolValue(&o.TrustProxyHeaders), "trust-proxy-headers", "CAPSULE_TRUST_PROXY_HEADERS",
		"identify HTTP clients by X-Forwarded-For's first address (only behind a proxy that sets it)")
	e.Var(supervisor.DurationValue(&o.ShutdownGrace), "shutdown-grace", "CAPSULE_SHUTDOWN_GRACE",
		"on SIGTERM or SIGINT, how long running calls may take to finish before their workers are killed")
}

// Resolve completes the options after parsing: it applies the defaults
// that depend on cfg, turns a bare port into a loopback address, and reads
// the token. It only reads the token for HTTP, where it is used.
func (o *ServeOptions) Resolve(cfg supervisor.Config) error {
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
// code (MaxCode characters, up to 4 bytes each in UTF-8), the inputs
// (MaxCode bytes) and the files passed in as base64 (4 bytes for every 3),
// plus 1MiB for JSON escaping and the JSON-RPC envelope, so that a call the
// supervisor would take is not refused by the transport.
func DefaultMaxRequestBody(l supervisor.Limits) supervisor.Size {
	return 5*l.MaxCode + (l.MaxFilesIn+2)/3*4 + 1<<20
}

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
type autoSize struct{ s *supervisor.Size }

func (v autoSize) String() string {
	switch {
	case v.s == nil:
		return "" // the flag package's zero value, so the default below is shown
	case *v.s == 0:
		return "5 × max-code + 4/3 × max-files-in + 1MiB"
	}
	return v.s.String()
}

func (v autoSize) Set(s string) error {
	n, err := supervisor.ParseSize(s)
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

func (v autoInt) Set(s string) error { return supervisor.IntValue(v.n, 1).Set(s) }
