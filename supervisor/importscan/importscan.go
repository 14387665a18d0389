// Package importscan finds the modules a piece of Python code imports,
// cheaply and without parsing it, for the supervisor to pick the
// interpreter snapshot a call starts from (python.VariantsFor).
//
// It reads the code once as a stream of Python tokens (names, string
// literals, punctuation; comments and the insides of strings skipped) and
// matches the import forms on them: `import a.b as c, d`, `from a.b import
// c` (relative imports are not top-level modules and are left out), and
// `__import__("a")` or `importlib.import_module("a.b")` with a string
// literal. It checks nothing else: an import in a branch that never runs
// counts, and one built from a variable does not. That is enough, because
// a wrong answer only costs time: every snapshot runs any code correctly.
package importscan

import "strings"

// MaxModules bounds what Modules returns: no call imports more distinct
// modules, and the bound keeps the scan linear in the code's size.
const MaxModules = 256

// Modules returns the top-level names of the modules code imports, each
// once, in the order they first appear, at most MaxModules.
func Modules(code string) []string {
	if !strings.Contains(code, "import") {
		return nil // every form has the word; most calls have none
	}
	s := scanner{src: code}
	var found names
	tok := s.next()
	for tok.kind != eof && len(found.list) < MaxModules {
		switch {
		case tok.isName("import"):
			tok = s.importNames(&found)
		case tok.isName("from"):
			tok = s.fromImport(&found)
		case tok.isName("__import__") || tok.isName("import_module"):
			tok = s.importCall(&found)
		default:
			tok = s.next()
		}
	}
	return found.list
}

// names collects distinct names in order.
type names struct {
	list []string
	seen map[string]bool
}

func (n *names) add(name string) {
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	if !n.seen[name] && len(n.list) < MaxModules {
		n.seen[name] = true
		n.list = append(n.list, name)
	}
}

// importNames reads what follows `import`: dotted names, each with an
// optional `as` alias, separated by commas. It returns the first token
// after them.
func (s *scanner) importNames(found *names) token {
	for {
		tok := s.next()
		if tok.kind != name {
			return tok
		}
		found.add(tok.text)
		tok = s.dottedRest()
		if tok.isName("as") {
			s.next() // the alias
			tok = s.next()
		}
		if !tok.isOp(',') {
			return tok
		}
	}
}

// fromImport reads what follows `from`: a module counts when `import`
// follows its dotted name; the names imported from it are skipped (they
// are not modules of their own, or are submodules of it). A relative
// module (leading dots) is not top-level, and `yield from` or `raise ...
// from` have no `import`.
func (s *scanner) fromImport(found *names) token {
	tok := s.next()
	module := ""
	if tok.newline {
		return tok
	}
	if tok.kind == name {
		module = tok.text
		tok = s.dottedRest()
	} else {
		for tok.isOp('.') {
			tok = s.next()
		}
		if tok.kind == name && !tok.isName("import") {
			tok = s.dottedRest()
		}
	}
	if !tok.isName("import") || tok.newline {
		return tok
	}
	if module != "" {
		found.add(module)
	}
	return s.skipImported()
}

// skipImported skips what follows `from m import`: `*`, or names with
// optional aliases separated by commas, in parentheses (across lines) or
// not (to the end of the line).
func (s *scanner) skipImported() token {
	tok := s.next()
	if tok.isOp('(') {
		for tok = s.next(); tok.kind == name || tok.isOp(','); tok = s.next() {
		}
		if tok.isOp(')') {
			tok = s.next()
		}
		return tok
	}
	for {
		if tok.isOp('*') {
			return s.next()
		}
		if tok.kind != name || tok.newline {
			return tok
		}
		if tok = s.next(); tok.isName("as") && !tok.newline {
			s.next() // the alias
			tok = s.next()
		}
		if !tok.isOp(',') || tok.newline {
			return tok
		}
		tok = s.next()
	}
}

// dottedRest skips the `.name` parts after a dotted name's first and
// returns the token after them.
func (s *scanner) dottedRest() token {
	for {
		tok := s.next()
		if !tok.isOp('.') {
			return tok
		}
		if tok = s.next(); tok.kind != name {
			return tok
		}
	}
}

// importCall reads `(` and a string literal after __import__ or
// import_module: a module's name, possibly dotted, never relative.
func (s *scanner) importCall(found *names) token {
	tok := s.next()
	if !tok.isOp('(') {
		return tok
	}
	tok = s.next()
	if tok.kind == literal {
		if first, ok := topLevel(tok.text); ok {
			found.add(first)
		}
	}
	return tok
}

// topLevel returns the first part of a dotted module name, if text is one.
func topLevel(text string) (string, bool) {
	first := ""
	for part := range splitDots(text) {
		if !isIdentifier(part) {
			return "", false
		}
		if first == "" {
			first = part
		}
	}
	return first, first != ""
}

// splitDots yields the parts of text between dots.
func splitDots(text string) func(func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i <= len(text); i++ {
			if i == len(text) || text[i] == '.' {
				if !yield(text[start:i]) {
					return
				}
				start = i + 1
			}
		}
	}
}

func isIdentifier(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}
