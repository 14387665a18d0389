package expctxkeys

// CompiledImageWriterKey is a context.Context Value key. Its associated value
// is the io.Writer that Runtime.CompileModule writes the compiled image to.
type CompiledImageWriterKey struct{}

// CompiledImageKey is a context.Context Value key. Its associated value is the
// []byte compiled image that Runtime.CompileModule loads the code from.
type CompiledImageKey struct{}
