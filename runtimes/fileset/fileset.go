// Package fileset is what capsule knows about the files a call passes in
// and gets back: the rules their paths follow, how a tool call gives their
// contents (text, or bytes in base64), which of them fit the limits, and
// what kind of file each is (a MIME type by extension, images by their
// magic bytes, text or binary).
//
// The supervisor, the worker and both runtimes use this one package, so
// that a rule is the same on both sides of the worker boundary: the worker
// applies it, and the supervisor applies it again to everything the worker
// sends back.
package fileset

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// MaxPathBytes is the longest path, in bytes.
	MaxPathBytes = 255
	// MaxDepth is the most levels a path may have: "a/b/c" has three.
	MaxDepth = 8
	// OutputsDir is where, relative to Python's /tmp, a call leaves the
	// files it returns. No file passed in may be placed there.
	OutputsDir = "outputs"
)

// File is one file passed in or returned.
type File struct {
	// Path is relative: to /tmp for a file passed in, to /tmp/outputs
	// (or JavaScript's outputs object) for one returned.
	Path string
	// Data is the content; nil when Truncated.
	Data []byte
	// Binary says the content was given as bytes (base64 in a tool call,
	// a Uint8Array in JavaScript), not as text: JavaScript's `files` then
	// holds a Uint8Array rather than a string.
	Binary bool
	// Truncated marks a returned file that did not fit the limits: it is
	// listed with its size, and its content is not sent.
	Truncated bool
	// Size is the size of a Truncated file; Len gives every file's.
	Size int64
}

// Len is the file's size in bytes.
func (f File) Len() int64 {
	if f.Truncated {
		return f.Size
	}
	return int64(len(f.Data))
}

// TotalLen is the size of every file's content, truncated ones left out.
func TotalLen(files []File) int64 {
	var n int64
	for _, f := range files {
		if !f.Truncated {
			n += int64(len(f.Data))
		}
	}
	return n
}

// PathError is a path that breaks one of the rules.
type PathError struct {
	Path string
	// Rule says which rule, in words.
	Rule string
}

func (e *PathError) Error() string { return fmt.Sprintf("file %q: %s", e.Path, e.Rule) }

// CheckPath reports the first rule p breaks: it must be a relative,
// clean, valid UTF-8 path of at most MaxPathBytes bytes and MaxDepth
// levels, every character of which shows as itself (see CharRule). Files
// passed in and files returned, in both languages, are held to it: it is
// the one place the rule is written.
func CheckPath(p string) error {
	if rule := pathRule(p); rule != "" {
		return &PathError{Path: p, Rule: rule}
	}
	return nil
}

func pathRule(p string) string {
	switch {
	case p == "":
		return "the path is empty"
	case !utf8.ValidString(p):
		return "the path is not valid UTF-8"
	case strings.IndexByte(p, 0) >= 0:
		return "the path contains a NUL byte"
	case p[0] == '/':
		return "the path is absolute; give it relative to the working directory (/tmp), such as \"data.csv\""
	case len(p) > MaxPathBytes:
		return fmt.Sprintf("the path is %d bytes, longer than %d", len(p), MaxPathBytes)
	}
	for _, r := range p {
		if rule := CharRule(r); rule != "" {
			return "the path contains " + rule
		}
	}
	elems := strings.Split(p, "/")
	for _, e := range elems {
		switch e {
		case "..":
			return "the path contains \"..\""
		case "", ".":
			return "the path has an empty or \".\" element; write it as a/b"
		}
	}
	if len(elems) > MaxDepth {
		return fmt.Sprintf("the path has %d levels, more than %d", len(elems), MaxDepth)
	}
	return ""
}

// nameCharRules is the rule every character of a path follows, in
// words, for the errors that name it.
const nameCharRules = "a file name may hold no control, bidirectional control, line or paragraph separator, or invisible character"

// CharRule says why r may not be in a file name, or "" when it may: a name
// must show as what it is, to a person reading a listing and to a model
// reading the answer. Refused are
//
//   - control characters, C0, DEL and C1 (general category Cc): a terminal
//     acts on them;
//   - line and paragraph separators (U+0085, U+2028, U+2029): they break
//     a name over lines;
//   - bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E,
//     U+2066-U+2069): they show a name in another order than it has, so
//     that "inv\u202etxt.exe" reads "invexe.txt";
//   - invisible characters: the rest of general category Cf (U+200B-U+200D,
//     U+2060-U+2064, U+FEFF, U+00AD, tags, ...), and Unicode's other
//     default-ignorable code points and variation selectors (U+034F,
//     U+115F, U+3164, U+FE00-U+FE0F, ...): they show as nothing, so two
//     names that look alike can differ.
//
// That is every Default_Ignorable_Code_Point of Unicode, and a few visible
// format characters beside (U+0600-U+0605, U+06DD, ...: marks that belong
// before digits, not in names).
func CharRule(r rune) string {
	switch {
	case r == 0x85 || unicode.In(r, unicode.Zl, unicode.Zp):
		return fmt.Sprintf("a line or paragraph separator (U+%04X); %s", r, nameCharRules)
	case unicode.Is(unicode.Cc, r):
		return fmt.Sprintf("a control character (U+%04X); %s", r, nameCharRules)
	case unicode.Is(unicode.Bidi_Control, r):
		return fmt.Sprintf("a bidirectional control character (U+%04X), which shows a name in another order than it has; %s", r, nameCharRules)
	case unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
		return fmt.Sprintf("an invisible character (U+%04X), which shows as nothing; %s", r, nameCharRules)
	}
	return ""
}

// Compare orders paths as a directory tree is walked with each
// directory's names sorted: element by element, so that "a/b" comes before
// "a-b" (a directory's files stay together). It is the "path order" of
// everything capsule lists.
func Compare(a, b string) int {
	for {
		ea, resta, moreA := strings.Cut(a, "/")
		eb, restb, moreB := strings.Cut(b, "/")
		if c := strings.Compare(ea, eb); c != 0 {
			return c
		}
		switch {
		case !moreA && !moreB:
			return 0
		case !moreA:
			return -1
		case !moreB:
			return 1
		}
		a, b = resta, restb
	}
}

// Sort sorts files in path order (Compare).
func Sort(files []File) {
	slices.SortFunc(files, func(a, b File) int { return Compare(a.Path, b.Path) })
}

// Check checks a set of files passed in: every path follows CheckPath's
// rules, none lies in OutputsDir, and no two collide (the same path twice,
// or one path a directory of another). It sorts files in path order.
func Check(files []File) error {
	Sort(files)
	for _, f := range files {
		if err := CheckPath(f.Path); err != nil {
			return err
		}
		if f.Path == OutputsDir || strings.HasPrefix(f.Path, OutputsDir+"/") {
			return &PathError{Path: f.Path, Rule: "the path is in outputs/, which is where the code leaves the files it returns; pass it elsewhere"}
		}
	}
	c := PathSet{}
	for _, f := range files {
		if err := c.Add(f.Path); err != nil {
			return err
		}
	}
	return nil
}

// PathSet finds paths that collide with one added before: the same path,
// or a path one of whose directories is a file (or the reverse, when a
// file comes after its directory's files). Make one with PathSet{}: a
// nil PathSet cannot be added to.
type PathSet map[string]bool // path → is a file (false: a directory)

// Add adds p, or says which path it collides with.
func (c PathSet) Add(p string) error {
	if _, ok := c[p]; ok {
		if c[p] {
			return &PathError{Path: p, Rule: "the path is given twice"}
		}
		return &PathError{Path: p, Rule: "the path is also a directory of another file"}
	}
	for i := range len(p) {
		if p[i] != '/' {
			continue
		}
		dir := p[:i]
		if c[dir] {
			return &PathError{Path: p, Rule: fmt.Sprintf("the path is inside %q, which is a file", dir)}
		}
		c[dir] = false
	}
	c[p] = true
	return nil
}

// Limits bound the files a call gets back.
type Limits struct {
	// MaxBytes bounds the content sent, all files together.
	MaxBytes int64
	// MaxFiles bounds how many files are sent.
	MaxFiles int
}

// MaxListed bounds how many returned files an answer lists, sent or
// truncated: each costs the answer a line, and a guest can make millions.
const MaxListed = 1024

// Picker decides, for returned files taken in path order, which are sent
// and which are listed as truncated: each file that still fits both
// limits is sent, each that does not is listed, up to MaxListed files.
// The worker picks with it, and the supervisor checks the worker's picks
// with another.
type Picker struct {
	lim    Limits
	bytes  int64
	sent   int
	listed int
}

// NewPicker returns a Picker for lim.
func NewPicker(lim Limits) *Picker { return &Picker{lim: lim} }

// Pick takes the next file, of size bytes, and says whether it is sent,
// and whether it is listed at all (a file that is not is left out).
func (p *Picker) Pick(size int64) (send, list bool) {
	if p.listed >= MaxListed || size < 0 {
		return false, false
	}
	p.listed++
	if p.sent >= p.lim.MaxFiles || size > p.lim.MaxBytes-p.bytes {
		return false, true
	}
	p.sent++
	p.bytes += size
	return true, true
}
