package toolcall

import (
	"fmt"
	"strconv"
	"strings"
)

// A request means one thing only if every reader finds the same members in
// it. encoding/json, which mcp-go decodes with, matches a key to a field
// without regard to case or Unicode folding ("Name", "NAME" and "name" are
// all the field name; so is "argumentſ", with U+017F, for arguments) and
// keeps the last of duplicate keys; a gateway, an allow-list or an audit
// log in front of capsule may match exactly, or keep the first. So Split
// refuses a message that holds a key twice anywhere, or, where Go structs
// decode it (the envelope, params, and a tool call's arguments), a key
// that is not a name the protocol spells but differs from one only by
// case or folding. What is left reads the same to every reader.

// envelopeNames are the members of a JSON-RPC message.
var envelopeNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// paramsNames are the members mcp-go decodes from the params of the
// requests and notifications it serves (TestParamsNamesCoverMCPGo checks
// them against its types).
var paramsNames = []string{
	"_meta", "argument", "arguments", "capabilities", "clientInfo", "context", "cursor", "inputResponses",
	"level", "message", "name", "notifications", "progress", "progressToken", "protocolVersion", "reason",
	"ref", "requestId", "requestState", "task", "taskId", "total", "uri",
}

// keyError is a key that makes a message ambiguous.
type keyError struct {
	// path leads to the object that holds key, innermost first (it is
	// gathered as the error unwinds).
	path []string
	key  string
	// known is the name key differs from only by case or folding; empty
	// when key comes twice.
	known string
	// own marks an error about a member found while reading that member,
	// whose own name is not part of the path.
	own bool
}

func (e *keyError) Error() string {
	where := "the message"
	if len(e.path) > 0 {
		parts := make([]string, 0, len(e.path))
		for i := len(e.path) - 1; i >= 0; i-- {
			p := e.path[i]
			switch {
			case strings.HasPrefix(p, "["):
				parts = append(parts, p)
			case len(parts) > 0:
				parts = append(parts, "."+quoteKey(p, true))
			default:
				parts = append(parts, quoteKey(p, true))
			}
		}
		where = `"` + strings.Join(parts, "") + `"`
	}
	if e.known != "" {
		return fmt.Sprintf("ambiguous request: %s has the key %s, which differs from %q only by case or Unicode folding; "+
			"keys are matched exactly as the protocol spells them", where, quoteKey(e.key, false), e.known)
	}
	return fmt.Sprintf("ambiguous request: %s has the key %s more than once; a key may appear only once", where, quoteKey(e.key, false))
}

// topLevel reports whether the ambiguous key is a member of the message
// itself rather than of its params.
func (e *keyError) topLevel() bool { return len(e.path) == 0 }

// within records that err, if a *keyError, arose in the member or element
// named step.
func within(err error, step string) error {
	if ke, ok := err.(*keyError); ok {
		if ke.own {
			ke.own = false
		} else {
			ke.path = append(ke.path, step)
		}
	}
	return err
}

// quoteKey shows a key in a message: in ASCII, so that a look-alike
// (U+017F for s, U+212A for K) shows as the escape it is, and cut short
// when long. bare leaves a plain name unquoted, for paths.
func quoteKey(k string, bare bool) string {
	const most = 64
	cut := ""
	if len(k) > most {
		k, cut = k[:most], "…"
	}
	q := strconv.QuoteToASCII(k)
	if bare && q == `"`+k+`"` && k != "" && !strings.ContainsAny(k, ".[]") {
		return k + cut
	}
	return q + cut
}

// checkNames refuses key when it is none of names but differs from one
// of them only by case or Unicode folding, as encoding/json would match
// it (strings.EqualFold is the same fold: encoding/json's foldName).
func checkNames(key string, names []string) error {
	for _, n := range names {
		if key == n {
			return nil
		}
	}
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return &keyError{key: key, known: n, own: true}
		}
	}
	return nil
}

// keySet is the keys of one object so far. Most objects have a few keys,
// which a slice holds with no hashing; a large one moves to a map.
type keySet struct {
	few  []string
	many map[string]struct{}
}

// add adds k and reports whether it was new.
func (s *keySet) add(k string) bool {
	if s.many != nil {
		if _, ok := s.many[k]; ok {
			return false
		}
		s.many[k] = struct{}{}
		return true
	}
	for _, f := range s.few {
		if f == k {
			return false
		}
	}
	if len(s.few) < 16 {
		s.few = append(s.few, k)
		return true
	}
	s.many = make(map[string]struct{}, 2*len(s.few))
	for _, f := range s.few {
		s.many[f] = struct{}{}
	}
	s.many[k] = struct{}{}
	return true
}
