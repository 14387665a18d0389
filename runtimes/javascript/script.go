package javascript

import (
	"regexp"
	"strconv"
	"strings"
)

// How the user's code is evaluated: as a plain global script, as node and
// browsers run a classic script, unless it uses top-level await. QuickJS
// compiles a script with top-level await (JS_EVAL_FLAG_ASYNC) as the body of
// an async function, where `await` is reserved: `var await` and
// `class await {}` are SyntaxErrors there, and `await (x)` means something
// else than in a plain script. Neither parse can tell us which the code
// meant, so evalCode decides with both parses and a scan for the token:
//
//   - no `await` anywhere in the text: plain script, parsed once;
//   - `await` as a token (mentionsAwait): async first, and plain only if the
//     async parse is a SyntaxError (the code uses `await` as a name);
//   - `await` only inside strings, comments or regular expressions (as the
//     scanner sees them): plain first, compiled without running, and async
//     only if that is a SyntaxError (which covers anything the scanner
//     misreads).
//
// A parse never runs code, so trying the other mode after a SyntaxError
// cannot run anything twice. When both parses fail, the error reported is
// the one further into the code (the other mode stopped at a use of
// `await` that the code meant the other way), the async one on a tie.

const (
	// evalFlagCompileOnly is JS_EVAL_FLAG_COMPILE_ONLY: parse and compile,
	// and return the compiled function instead of running it.
	evalFlagCompileOnly = 1 << 5

	// evalFlagAsync is JS_EVAL_FLAG_ASYNC: a global script may use
	// top-level await, and evaluates to a promise of {value: <completion>}.
	evalFlagAsync = 1 << 7
)

// evalCode evaluates the user's code. It returns the completion value of a
// plain script, or (async true) the promise of an async one, or the
// exception that stopped it: a SyntaxError from the parse, or what a plain
// script threw.
func (in *instance) evalCode(code string) (result uint32, async bool, exc uint32) {
	switch {
	case !strings.Contains(code, "await"):
		result, exc = in.evalScript(code, scriptName, 0)
		return result, false, exc
	case mentionsAwait(code):
		result, asyncExc := in.evalScript(code, scriptName, evalFlagAsync)
		if asyncExc == 0 {
			return result, true, 0
		}
		if !in.isSyntaxError(asyncExc) {
			return 0, true, asyncExc
		}
		if plainExc := in.compileOnly(code); plainExc != 0 {
			return 0, true, in.furtherError(asyncExc, plainExc)
		}
		in.freeValue(asyncExc)
		result, exc = in.evalScript(code, scriptName, 0)
		return result, false, exc
	default:
		plainExc := in.compileOnly(code)
		if plainExc == 0 {
			result, exc = in.evalScript(code, scriptName, 0)
			return result, false, exc
		}
		if !in.isSyntaxError(plainExc) {
			return 0, false, plainExc
		}
		result, asyncExc := in.evalScript(code, scriptName, evalFlagAsync)
		if asyncExc == 0 {
			in.freeValue(plainExc)
			return result, true, 0
		}
		return 0, true, in.furtherError(asyncExc, plainExc)
	}
}

// compileOnly parses code as a plain script without running it, and
// returns the exception if that fails.
func (in *instance) compileOnly(code string) (exc uint32) {
	fn, exc := in.evalScript(code, scriptName, evalFlagCompileOnly)
	if exc == 0 {
		in.freeValue(fn)
	}
	return exc
}

// isSyntaxError reports whether a parse's exception is a SyntaxError (not,
// say, an out-of-memory error). No user code has run yet, so describe only
// sees the engine's own error objects.
func (in *instance) isSyntaxError(exc uint32) bool {
	return in.describe(exc).Type == "SyntaxError"
}

// furtherError returns whichever of the async and plain parses' errors lies
// further into the code, the async one on a tie, and frees the other.
func (in *instance) furtherError(asyncExc, plainExc uint32) uint32 {
	ap, pp := errorPosition(in.describe(asyncExc).Traceback), errorPosition(in.describe(plainExc).Traceback)
	if pp.after(ap) {
		in.freeValue(asyncExc)
		return plainExc
	}
	in.freeValue(plainExc)
	return asyncExc
}

type position struct{ line, column int }

func (p position) after(q position) bool {
	return p.line > q.line || (p.line == q.line && p.column > q.column)
}

var inputPosition = regexp.MustCompile(regexp.QuoteMeta(scriptName) + `:(\d+):(\d+)`)

// errorPosition is the first <input>:line:column of a SyntaxError's
// traceback: where the parser stopped. Zero when there is none.
func errorPosition(traceback string) position {
	m := inputPosition.FindStringSubmatch(traceback)
	if m == nil {
		return position{}
	}
	line, _ := strconv.Atoi(m[1])
	column, _ := strconv.Atoi(m[2])
	return position{line, column}
}

// mentionsAwait reports whether code has `await` as a token of its own: not
// inside a string, template text, comment or regular expression, not part
// of a longer name, and not a property name after `.` or `#`. It is a
// scanner, not a parser: the one ambiguity it resolves by guessing is
// whether a `/` starts a regular expression (after `)`, `]`, `}`, a name or
// a literal it is taken as division), and evalCode does not depend on it
// being right (see above).
func mentionsAwait(code string) bool {
	var (
		i           int
		regexOK     = true // a `/` here starts a regular expression
		afterDot    bool   // the previous token was `.`, `?.` or `#`
		templates   []int  // brace depths at which template substitutions close
		braceDepth  int
		isIdentPart = func(c byte) bool {
			return c == '_' || c == '$' || c == '\\' || c >= 0x80 ||
				('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
		}
	)
	// skipQuoted moves i past the string literal or template text that
	// starts at i, and reports whether a template reached `${`.
	skipQuoted := func(quote byte) (substitution bool) {
		for i++; i < len(code); i++ {
			switch c := code[i]; {
			case c == '\\':
				i++
			case c == quote:
				i++
				return false
			case quote == '`' && c == '$' && i+1 < len(code) && code[i+1] == '{':
				i += 2
				return true
			}
		}
		return false
	}
	for i < len(code) {
		c := code[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			i++
		case c == '/' && i+1 < len(code) && code[i+1] == '/':
			for i < len(code) && code[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(code) && code[i+1] == '*':
			end := strings.Index(code[i+2:], "*/")
			if end < 0 {
				return false
			}
			i += 2 + end + 2
		case c == '/' && regexOK:
			inClass := false
			for i++; i < len(code) && code[i] != '\n'; i++ {
				if code[i] == '\\' {
					i++
				} else if code[i] == '[' {
					inClass = true
				} else if code[i] == ']' {
					inClass = false
				} else if code[i] == '/' && !inClass {
					break
				}
			}
			for i++; i < len(code) && isIdentPart(code[i]); i++ { // flags
			}
			regexOK, afterDot = false, false
		case c == '\'' || c == '"':
			skipQuoted(c)
			regexOK, afterDot = false, false
		case c == '`':
			if skipQuoted('`') {
				templates = append(templates, braceDepth)
				regexOK = true
			} else {
				regexOK = false
			}
			afterDot = false
		case c == '}' && len(templates) > 0 && templates[len(templates)-1] == braceDepth:
			templates = templates[:len(templates)-1]
			i-- // skipQuoted starts at the character before the template text
			if skipQuoted('`') {
				templates = append(templates, braceDepth)
				regexOK = true
			} else {
				regexOK = false
			}
			afterDot = false
		case isIdentPart(c):
			start := i
			for i < len(code) && isIdentPart(code[i]) {
				if code[i] == '\\' {
					i++
				}
				i++
			}
			word := code[start:min(i, len(code))]
			if word == "await" && !afterDot {
				return true
			}
			regexOK = keywordBeforeExpression[word]
			afterDot = false
		default:
			switch c {
			case '{':
				braceDepth++
			case '}':
				braceDepth--
			}
			afterDot = c == '.' || c == '#'
			if c == '.' && i+1 < len(code) && '0' <= code[i+1] && code[i+1] <= '9' {
				afterDot = false // a number such as .5
			}
			regexOK = c != ')' && c != ']' && c != '}'
			i++
		}
	}
	return false
}

// keywordBeforeExpression are the words after which a `/` starts a regular
// expression rather than a division.
var keywordBeforeExpression = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true,
	"delete": true, "void": true, "throw": true, "case": true, "do": true, "else": true,
	"yield": true, "await": true,
}
