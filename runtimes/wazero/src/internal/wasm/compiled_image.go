package wasm

import (
	"io"

	"github.com/tetratelabs/wazero/api"
)

// CompiledImageEngine is implemented by an Engine that can write the compiled
// form of a module as an image, and load a module's compiled code from such
// an image in place.
type CompiledImageEngine interface {
	// WriteCompiledImage writes to w the image of module, which must have been
	// compiled by this engine from binary with features.
	WriteCompiledImage(module *Module, binary []byte, features api.CoreFeatures, w io.Writer) error

	// OpenCompiledImage checks that image was written by this engine for
	// binary, features and ensureTermination. It returns the module ID
	// recorded in the image and a function that loads the compiled code of
	// module, decoded from binary and given that ID, from image.
	OpenCompiledImage(image, binary []byte, features api.CoreFeatures, ensureTermination bool) (ModuleID, func(module *Module) error, error)
}
