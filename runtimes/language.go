package runtimes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
)

// Language is one language capsule runs, as its runtime package describes
// it, once (python.Language, javascript.Language). cmd/capsule puts them
// in a Languages table and hands it to the supervisor, its MCP edge and
// the worker, so that none of them imports a runtime for what a language
// is; adding one touches the table and its runtime package.
type Language struct {
	// Name is the language's name: Python, JavaScript.
	Name string
	// Tool is how the language's MCP tool reads.
	Tool Tool
	// Built reports an error when the binary embeds make wazero's empty
	// placeholders for the runtime's assets instead of the runtime: it
	// could answer no call of the language.
	Built func() error
	// Compile loads the language's module, through the file compilation
	// cache when the Config names one: the worker's compile step.
	Compile func(context.Context, Config) (Engine, error)
	// Identity stands for everything the language's interpreter snapshot,
	// or one of its variants' (variant "" for the plain interpreter),
	// depends on; SnapshotKey keys snapshots by it.
	Identity func(variant string) (string, error)
	// Variants name the language's snapshot variants, interpreters with
	// more modules imported at their start-up; none for a language that
	// has none.
	Variants []string
	// VariantsFor names the variants whose modules some of modules (a
	// call's imports) are, best first; required says the first runs a
	// module of its own, the only one those imports work on. nil for a
	// language without variants.
	VariantsFor func(modules []string) (names []string, required bool)
	// OwnModule reports whether a variant runs a module of its own rather
	// than the plain interpreter's (numpy's): its snapshot worker loads,
	// or compiles, that module as a plain one does, and its calls cannot
	// start from the plain interpreter. nil: no variant does.
	OwnModule func(variant string) bool
	// Image returns the compiled image of a module (as Module names it)
	// that this binary embeds for its architecture
	// (runtimes/compiled), or nil: cmd/capsule fills it in.
	Image func(module string) []byte
	// Packages is how the language takes packages beyond its own library,
	// or nil for none.
	Packages *Packages
	// Files is how the language's code takes files in and gives them
	// back.
	Files Files
}

// Files is how a language's code takes files in and gives them back.
type Files struct {
	// InScratch says the files passed in are written into the code's
	// private writable directory (/tmp, also the working directory),
	// counted against --scratch, and the files returned are what the code
	// leaves in /tmp/outputs; otherwise the code gets them, and returns
	// files, as values (JavaScript's globals files and outputs).
	InScratch bool
	// Argument says, in the `files` argument's description, where the
	// code finds the files passed in.
	Argument string
	// Usage says, in the tool's description, how the code reads and
	// returns files, with an example; %s stands for how they come back.
	Usage string
	// NoScratch replaces Usage for an InScratch language on a server that
	// gives it no writable directory (--scratch 0).
	NoScratch string
	// LargeOutput says how the code returns large data rather than print
	// it, in the output limit's note.
	LargeOutput string
}

// Tool is how a language's MCP tool reads.
type Tool struct {
	// Name and Title are the tool's: execute_python, "Run Python".
	Name, Title string
	// About says what runs, first in the tool's description.
	About string
	// InputsIn says where the code finds `inputs`.
	InputsIn string
	// Colours are the two colours of the tool's icon, a pill.
	Colours [2]string
}

// Packages is how a language takes packages beyond its own library: the
// ones bundled with its runtime, and a directory or archive of the
// operator's.
type Packages struct {
	// Bundled lists the packages bundled with the runtime as a call
	// imports them, each with its upstream version ("attr/attrs 22.2.0"),
	// sorted.
	Bundled func() ([]string, error)
	// BuiltIn says, for the tool's description, what is built into the
	// runtime beyond its standard library and the bundled packages; empty
	// for nothing.
	BuiltIn func() string
	// Open checks the operator's packages at path, a directory or an
	// archive, as every worker will load them, read as ids (nil: as this
	// process), and returns the names they make importable and a digest
	// of them (part of the snapshot key).
	Open func(path string, ids *IDs) (names []string, digest string, err error)
}

// IDs are a host uid and gid.
type IDs struct{ UID, GID int }

// Languages is the table of languages, in the order the tools are
// listed.
type Languages []Language

// Lookup returns the language named name.
func (ls Languages) Lookup(name string) (Language, bool) {
	i := slices.IndexFunc(ls, func(l Language) bool { return l.Name == name })
	if i < 0 {
		return Language{}, false
	}
	return ls[i], true
}

// Names are the languages' names, in order.
func (ls Languages) Names() []string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return names
}

// HasOwnModule reports whether variant runs a module of its own
// (OwnModule); the plain interpreter ("") never does.
func (l Language) HasOwnModule(variant string) bool {
	return variant != "" && l.OwnModule != nil && l.OwnModule(variant)
}

// Module names the module variant ("" for the plain interpreter) runs, as
// its build output and compiled image are named: the language's name, or
// NAME-VARIANT for a variant with a module of its own (python-numpy).
func (l Language) Module(variant string) string {
	if l.HasOwnModule(variant) {
		return l.Name + "-" + variant
	}
	return l.Name
}

// CompiledImage returns the compiled image of variant's module that the
// binary embeds, or nil (Image).
func (l Language) CompiledImage(variant string) []byte {
	if l.Image == nil {
		return nil
	}
	return l.Image(l.Module(variant))
}

// SnapshotKey names the interpreter snapshot of the language, or of one
// of its variants, for a memory limit: it changes with anything the image
// depends on (the runtime's module, data and start-up program, the
// variant's imports, the limit, the architecture, and whether the
// compiled code has bounds checks or relies on guard pages), so an image
// made by another binary or for other limits is never used.
func (l Language) SnapshotKey(variant string, memoryBytes uint64) (string, error) {
	if l.Identity == nil {
		return "", fmt.Errorf("%s: the language describes no snapshot identity", l.Name)
	}
	id, err := l.Identity(variant)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%s\x00guard-pages=%t", id, memoryBytes, runtime.GOARCH, GuardPages()))
	return l.Name + "-" + hex.EncodeToString(h[:16]), nil
}
