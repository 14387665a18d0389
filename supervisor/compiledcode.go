package supervisor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"capsule/supervisor/snapcache"
)

// compileAtStartEnv, set in the server's environment, makes it give its
// snapshot workers no compiled image, so that they compile the modules as
// on a platform whose binary has none. Only tests use it.
const compileAtStartEnv = "CAPSULE_TEST_COMPILE_AT_START"

// moduleName names the module name's snapshot runs, as the binary's
// compiled images are named: the language's, or a variant's own (its
// Language.Module).
func (s *Supervisor) moduleName(name snapcache.Name) string {
	l, _ := s.cfg.Languages.Lookup(name.Language)
	if l.Name == "" {
		return name.Language
	}
	return l.Module(name.Variant)
}

// giveCompiledImage writes the compiled image of name's module that the
// binary embeds (runtimes/compiled, through the language table) into
// code, a snapshot worker's empty compiled-image memfd, for the worker to
// load the module from, and returns it; nil when the binary has none. The
// image is part of the binary, so it is trusted as the binary is; the
// worker falls back to compiling when wazero refuses it on this CPU.
func (s *Supervisor) giveCompiledImage(name snapcache.Name, code *os.File) ([]byte, error) {
	l, _ := s.cfg.Languages.Lookup(name.Language)
	image := l.CompiledImage(name.Variant)
	if image == nil || os.Getenv(compileAtStartEnv) != "" {
		return nil, nil
	}
	// At an offset, leaving the file's, which the worker shares, at 0.
	if _, err := code.WriteAt(image, 0); err != nil {
		return nil, fmt.Errorf("compiled image: %w", err)
	}
	return image, nil
}

// Where a snapshot worker took the module's code from, as logged.
const (
	codeEmbedded = "embedded"
	codeCompiled = "compiled"
)

// logCodeSource says where a snapshot worker that made its compiled image
// (a plain one, or a variant's with its own module) took the module's code
// from: the image it was given, if code still holds it, or a compilation
// for this CPU; workerStderr has the worker's reason for refusing an
// image. (Any other variant's worker takes the plain snapshot's.)
func (s *Supervisor) logCodeSource(name snapcache.Name, code *os.File, given []byte, workerStderr string) {
	args := []any{"language", name.Language}
	if name.Variant != "" {
		args = append(args, "module", s.moduleName(name))
	}
	same, err := holds(code, given)
	switch {
	case err != nil:
		s.log.Warn("cannot read the compiled image back", append(args, "error", err)...)
	case given != nil && same:
		s.log.Info("runtime code loaded from the binary's compiled image", append(args, "code", codeEmbedded)...)
	case given != nil:
		s.log.Warn("the binary's compiled code does not run here (see reason): compiled the runtime instead, once per binary",
			append(args, "code", codeCompiled, "reason", strings.TrimSpace(workerStderr))...)
	default:
		s.log.Info("runtime compiled for this CPU", append(args, "code", codeCompiled)...)
	}
}

// holds reports whether f holds exactly image (false for a nil image).
func holds(f *os.File, image []byte) (bool, error) {
	if image == nil {
		return false, nil
	}
	st, err := f.Stat()
	if err != nil || st.Size() != int64(len(image)) {
		return false, err
	}
	buf := make([]byte, 1<<20)
	for off := 0; off < len(image); off += len(buf) {
		n, err := f.ReadAt(buf[:min(len(buf), len(image)-off)], int64(off))
		if err != nil && err != io.EOF {
			return false, err
		}
		if !bytes.Equal(buf[:n], image[off:off+n]) || n == 0 {
			return false, nil
		}
	}
	return true, nil
}
