package wazevo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/tetratelabs/wazero/internal/leb128"
	"github.com/tetratelabs/wazero/internal/platform"
	"github.com/tetratelabs/wazero/internal/wasm"
)

// A compiled image holds what the file cache holds for a module, plus what is
// needed to load it without the binary's hash or validation, laid out so that
// the executable can run in place from a mapping of the image file. All
// integers are little endian:
//
//	magic            8 bytes "WZIMAGE1"
//	wazero version   1 byte length, then the string
//	GOARCH           1 byte length, then the string
//	CPU features     8 bytes (platform.CpuFeatures.Raw)
//	core features    8 bytes (api.CoreFeatures)
//	flags            1 byte; bit 0: ensureTermination, bit 1: compiled for
//	                 a guard-page memory (wasm.Module.MemoryGuardPages)
//	module ID        32 bytes (wasm.Module.ID)
//	binary length    8 bytes
//	binary digest    4 bytes (binaryDigest)
//	function count   4 bytes, then an 8-byte executable offset per function
//	source map       8 bytes count, then pairs of 8-byte wasm binary offset
//	                 and 8-byte executable offset
//	catch clauses    as in the file cache
//	executable       8 bytes offset (a multiple of imageExecutableAlign),
//	                 8 bytes length; the executable itself ends the image.
var imageMagic = []byte("WZIMAGE1")

// imageExecutableAlign aligns the executable in an image to the largest page
// size of the platforms wazevo supports, so that it can be mapped and made
// executable in place.
const imageExecutableAlign = 64 << 10

const (
	imageFlagEnsureTermination = 1
	imageFlagMemoryGuardPages  = 2
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// binaryDigest returns the CRC-32C of the wasm binary bin, except for the
// contents of its code section: all of the module that a module loaded from
// an image takes from its binary. The function bodies are taken from the
// image instead, so an image always runs with the module it was compiled
// from, and the bodies, most of a binary, are never read: not even paged in.
// A binary whose sections cannot be walked is digested whole.
func binaryDigest(bin []byte) uint32 {
	pos := min(8, len(bin)) // magic and version
	crc := crc32.Checksum(bin[:pos], crc32c)
	for pos < len(bin) {
		size, n, err := leb128.LoadUint32(bin[pos+1:])
		contentStart := pos + 1 + int(n)
		if err != nil || uint64(size) > uint64(len(bin)-contentStart) {
			break
		}
		end := contentStart + int(size)
		if bin[pos] == wasm.SectionIDCode {
			crc = crc32.Update(crc, crc32c, bin[pos:contentStart])
		} else {
			crc = crc32.Update(crc, crc32c, bin[pos:end])
		}
		pos = end
	}
	return crc32.Update(crc, crc32c, bin[pos:])
}

// WriteCompiledImage implements wasm.CompiledImageEngine.
func (e *engine) WriteCompiledImage(module *wasm.Module, bin []byte, features api.CoreFeatures, w io.Writer) error {
	cm, ok := e.getCompiledModuleFromMemory(module, false)
	if !ok {
		return errors.New("compiled image: the module is not compiled")
	} else if module.IsHostModule {
		return errors.New("compiled image: host modules have no image")
	} else if len(cm.listeners) > 0 {
		return errors.New("compiled image: a module compiled with function listeners cannot be written as an image")
	}
	var buf bytes.Buffer
	var b8 [8]byte
	u32 := func(v uint32) {
		binary.LittleEndian.PutUint32(b8[:4], v)
		buf.Write(b8[:4])
	}
	u64 := func(v uint64) {
		binary.LittleEndian.PutUint64(b8[:], v)
		buf.Write(b8[:])
	}
	buf.Write(imageMagic)
	buf.WriteByte(byte(len(e.wazeroVersion)))
	buf.WriteString(e.wazeroVersion)
	buf.WriteByte(byte(len(runtime.GOARCH)))
	buf.WriteString(runtime.GOARCH)
	u64(platform.CpuFeatures.Raw())
	u64(uint64(features))
	var flags byte
	if cm.ensureTermination {
		flags |= imageFlagEnsureTermination
	}
	if module.MemoryGuardPages {
		flags |= imageFlagMemoryGuardPages
	}
	buf.WriteByte(flags)
	buf.Write(module.ID[:])
	u64(uint64(len(bin)))
	u32(binaryDigest(bin))
	u32(uint32(len(cm.functionOffsets)))
	for _, offset := range cm.functionOffsets {
		u64(uint64(offset))
	}
	sm := &cm.sourceMap
	u64(uint64(len(sm.executableOffsets)))
	for i := range sm.executableOffsets {
		u64(sm.wasmBinaryOffsets[i])
		// executableOffsets are absolute addresses.
		u64(uint64(sm.executableOffsets[i] - uintptr(unsafe.Pointer(&cm.executable[0]))))
	}
	u32(uint32(len(cm.catchClauseTable)))
	for _, clauses := range cm.catchClauseTable {
		u32(uint32(len(clauses)))
		for _, c := range clauses {
			buf.WriteByte(c.Kind)
			u32(c.TagIndex)
		}
	}
	executableOffset := (buf.Len() + 16 + imageExecutableAlign - 1) &^ (imageExecutableAlign - 1)
	u64(uint64(executableOffset))
	u64(uint64(len(cm.executable)))
	buf.Write(make([]byte, executableOffset-buf.Len()))
	buf.Write(cm.executable)
	_, err := w.Write(buf.Bytes())
	if err != nil {
		return fmt.Errorf("compiled image: %w", err)
	}
	return nil
}

// imageReader reads the fields of an image, remembering the first error.
type imageReader struct {
	image []byte
	pos   int
	err   error
}

func (r *imageReader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.image)-r.pos {
		r.err = fmt.Errorf("compiled image: truncated at byte %d", r.pos)
		return nil
	}
	b := r.image[r.pos : r.pos+n]
	r.pos += n
	return b
}

func (r *imageReader) u8() byte {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *imageReader) u32() uint32 {
	if b := r.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *imageReader) u64() uint64 {
	if b := r.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads a 4- or 8-byte element count and checks that the image can hold
// that many elements of elemSize bytes, so that a malformed count cannot make
// the reader allocate more than the image's size.
func (r *imageReader) count(width, elemSize int) int {
	var n uint64
	if width == 4 {
		n = uint64(r.u32())
	} else {
		n = r.u64()
	}
	if r.err == nil && n > uint64(len(r.image)-r.pos)/uint64(elemSize) {
		r.err = fmt.Errorf("compiled image: count %d at byte %d exceeds the image", n, r.pos)
		return 0
	}
	return int(n)
}

func (r *imageReader) str() string { return string(r.bytes(int(r.u8()))) }

// OpenCompiledImage implements wasm.CompiledImageEngine.
func (e *engine) OpenCompiledImage(image, bin []byte, features api.CoreFeatures, ensureTermination bool) (wasm.ModuleID, func(*wasm.Module) error, error) {
	var id wasm.ModuleID
	r := &imageReader{image: image}
	if magic := r.bytes(len(imageMagic)); r.err == nil && !bytes.Equal(magic, imageMagic) {
		return id, nil, errors.New("compiled image: not a compiled image (bad magic)")
	}
	if v := r.str(); r.err == nil && v != e.wazeroVersion {
		return id, nil, fmt.Errorf("compiled image: written by wazero %q, this is %q: write the image again", v, e.wazeroVersion)
	}
	if arch := r.str(); r.err == nil && arch != runtime.GOARCH {
		return id, nil, fmt.Errorf("compiled image: written for %s, this is %s", arch, runtime.GOARCH)
	}
	if cpu := r.u64(); r.err == nil && cpu != platform.CpuFeatures.Raw() {
		return id, nil, fmt.Errorf("compiled image: written for CPU features %#x, this CPU has %#x: write the image again", cpu, platform.CpuFeatures.Raw())
	}
	if f := api.CoreFeatures(r.u64()); r.err == nil && f != features {
		return id, nil, fmt.Errorf("compiled image: written for core features %s, the runtime has %s", f, features)
	}
	flags := r.u8()
	if r.err == nil && (flags&imageFlagEnsureTermination != 0) != ensureTermination {
		return id, nil, fmt.Errorf("compiled image: written with close-on-context-done %v, the runtime has %v", !ensureTermination, ensureTermination)
	}
	imageGuardPages := flags&imageFlagMemoryGuardPages != 0
	copy(id[:], r.bytes(len(id)))
	binLen, binCRC := r.u64(), r.u32()
	if r.err == nil && (binLen != uint64(len(bin)) || binCRC != binaryDigest(bin)) {
		return id, nil, errors.New("compiled image: written for another wasm binary")
	}

	cm := &compiledModule{executables: &executables{executableInImage: true}}
	cm.functionOffsets = make([]int, r.count(4, 8))
	for i := range cm.functionOffsets {
		cm.functionOffsets[i] = int(r.u64())
	}
	smLen := r.count(8, 16)
	sourceOffsets := make([]uint64, smLen) // executable-relative until the executable is known.
	if smLen > 0 {
		cm.sourceMap.wasmBinaryOffsets = make([]uint64, smLen)
		for i := 0; i < smLen; i++ {
			cm.sourceMap.wasmBinaryOffsets[i] = r.u64()
			sourceOffsets[i] = r.u64()
		}
	}
	if tableLen := r.count(4, 4); tableLen > 0 {
		cm.catchClauseTable = make([][]wazevoapi.CatchClauseInstance, tableLen)
		for i := range cm.catchClauseTable {
			clauses := make([]wazevoapi.CatchClauseInstance, r.count(4, 5))
			for j := range clauses {
				clauses[j] = wazevoapi.CatchClauseInstance{Kind: r.u8(), TagIndex: r.u32()}
			}
			cm.catchClauseTable[i] = clauses
		}
	}
	executableOffset, executableLen := r.u64(), r.u64()
	if r.err != nil {
		return id, nil, r.err
	}
	if executableOffset < uint64(r.pos) || executableOffset%imageExecutableAlign != 0 ||
		executableOffset > uint64(len(image)) || executableLen != uint64(len(image))-executableOffset {
		return id, nil, fmt.Errorf("compiled image: executable at %d (length %d) does not end the image of %d bytes", executableOffset, executableLen, len(image))
	}
	for i, offset := range cm.functionOffsets {
		if offset < 0 || uint64(offset) >= executableLen {
			return id, nil, fmt.Errorf("compiled image: function %d at %d is outside the executable", i, offset)
		}
	}
	for _, offset := range sourceOffsets {
		if offset > executableLen {
			return id, nil, fmt.Errorf("compiled image: source map offset %d is outside the executable", offset)
		}
	}
	executable := image[executableOffset:]
	if len(executable) > 0 && uintptr(unsafe.Pointer(&executable[0]))%uintptr(os.Getpagesize()) != 0 {
		return id, nil, errors.New("compiled image: the image is not page-aligned in memory: pass a mapping of the image file")
	}

	load := func(module *wasm.Module) error {
		if len(cm.functionOffsets) != len(module.FunctionSection) {
			return fmt.Errorf("compiled image: has %d functions, the module %d", len(cm.functionOffsets), len(module.FunctionSection))
		}
		if imageGuardPages != module.MemoryGuardPages {
			return fmt.Errorf("compiled image: written with memory guard pages %v, the module is compiled with %v", imageGuardPages, module.MemoryGuardPages)
		}
		if _, ok := e.getCompiledModuleFromMemory(module, true); ok {
			return nil
		}
		if len(executable) > 0 {
			if err := platform.MprotectCodeSegment(executable); err != nil {
				return fmt.Errorf("compiled image: making the executable executable: %w", err)
			}
			cm.executable = executable
			base := uintptr(unsafe.Pointer(&executable[0]))
			if smLen > 0 {
				cm.sourceMap.executableOffsets = make([]uintptr, smLen)
				for i, offset := range sourceOffsets {
					cm.sourceMap.executableOffsets[i] = base + uintptr(offset)
				}
			}
		}
		e.addLoadedModule(module, cm, nil, ensureTermination)
		return nil
	}
	return id, load, nil
}
