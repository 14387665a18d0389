package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

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
