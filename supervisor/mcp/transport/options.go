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

// AddOrigins adds to list the browser origins in s, comma-separated:
// each normalised to scheme://host[:port], or "*" for any.
func AddOrigins(list []string, s string) ([]string, error) {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if part == "*" {
			list = append(list, part)
			continue
		}
		norm, err := normalizeOrigin(part)
		if err != nil {
			return list, err
		}
		list = append(list, norm)
	}
	return list, nil
}
