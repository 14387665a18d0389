package transport

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

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
