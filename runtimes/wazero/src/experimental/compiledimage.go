package experimental

import (
	"context"
	"io"

	"github.com/tetratelabs/wazero/internal/expctxkeys"
)

// WithCompiledImageWriter returns a context that makes Runtime.CompileModule
// write the compiled image of the module to w, once it has the compiled
// module (compiled now or taken from a cache).
//
// A compiled image is the module's native code and the tables needed to run
// it, laid out so that the native code starts at an offset that is a multiple
// of 64 KiB. A process can map an image file and hand the mapping to
// WithCompiledImage: the code then runs in place, without being read, copied
// or checked.
//
// Images need the compiler (wazero.NewRuntimeConfigCompiler) and cannot be
// written for modules compiled with function listeners. An image is only
// valid for the same wazero version, GOARCH, CPU features, core features and
// close-on-context-done setting it was written with.
func WithCompiledImageWriter(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, expctxkeys.CompiledImageWriterKey{}, w)
}

// WithCompiledImage returns a context that makes Runtime.CompileModule take
// the compiled code of the module from image, written before by
// WithCompiledImageWriter for the same binary, instead of compiling it or
// asking the compilation cache.
//
// image must be a page-aligned mapping of the image file, for example
// syscall.Mmap(fd, 0, size, PROT_READ, MAP_PRIVATE), and its file system must
// allow execution (a memfd does). CompileModule makes the native code in it
// executable in place: it is neither copied nor checksummed, so the caller
// vouches for the integrity of the image, exactly as for any other code it
// executes. The mapping and binary must stay mapped and unmodified for as long
// as the returned CompiledModule or any module instantiated from it is in use.
//
// Because the image records the module's ID and the binary was validated when
// the image was written, CompileModule does not hash or validate binary, nor
// read its function bodies. To refuse an image written for another binary it
// checks the binary's length and a CRC-32C of all of it but the function
// bodies: those are the one part of the module taken from the image, so a
// binary that differs from the image's only in function bodies runs as the
// module the image was compiled from. It fails if the
// image is malformed, or was written by another wazero version, for another
// architecture, CPU features, core features or close-on-context-done setting.
func WithCompiledImage(ctx context.Context, image []byte) context.Context {
	return context.WithValue(ctx, expctxkeys.CompiledImageKey{}, image)
}
