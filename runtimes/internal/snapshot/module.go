// Package snapshot starts an interpreter from a memory image taken after its
// start-up, in the manner of wizer: a trusted worker runs the interpreter's
// start-up once and writes the instance's linear memory and mutable globals
// to an image; every later worker instantiates the same module, reads the
// image into its memory, sets the globals, and is where the start-up left
// off without running it.
//
// Two things make that sound. The module the workers instantiate has no
// data segments (PrepareModule moves them out), so instantiation writes
// nothing into memory that the image would have to overwrite; the trusted
// worker applies them itself before the start-up. And every mutable global
// the module defines is exported, so its value can be read after the
// start-up and set again in the next instance.
package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"capsule/runtimes/internal/wasmbin"
)

// GlobalPrefix starts the export name of every mutable global that
// PrepareModule exports; the global's index follows it.
const GlobalPrefix = "capsule.global."

// dataMagic starts the encoding of what PrepareModule moved out of a
// module: the indices of the exported globals, then the data segments.
var dataMagic = []byte("CAPSULE-DATA-2\n")

// PrepareModule rewrites module for snapshots. It removes the data section
// and the data count section, and exports every mutable global the module
// defines as GlobalPrefix followed by its index. data records those
// indices and the active data segments; ParseData reads it back. Everything else is copied
// byte for byte. A module with passive data segments is refused: its code
// may use them at run time.
func PrepareModule(module []byte) (prepared, data []byte, err error) {
	sections, err := wasmbin.Sections(module)
	if err != nil {
		return nil, nil, err
	}
	var importedGlobals uint32
	var mutable []uint32
	var segments []byte
	var out []wasmbin.Section
	exported := false
	for _, s := range sections {
		switch s.ID {
		case wasmbin.SecImport:
			counts, err := wasmbin.ImportCounts(s.Payload)
			if err != nil {
				return nil, nil, err
			}
			importedGlobals = counts[wasmbin.KindGlobal]
		case wasmbin.SecGlobal:
			if mutable, err = mutableGlobals(s.Payload, importedGlobals); err != nil {
				return nil, nil, err
			}
		case wasmbin.SecDataCount:
			continue
		case wasmbin.SecData:
			if segments, err = appendSegments(nil, s.Payload); err != nil {
				return nil, nil, err
			}
			continue
		case wasmbin.SecExport:
			p, err := exportGlobals(s.Payload, mutable)
			if err != nil {
				return nil, nil, err
			}
			s.Payload, exported = p, true
		}
		out = append(out, s)
	}
	if !exported && len(mutable) > 0 {
		return nil, nil, errors.New("module has mutable globals but no export section")
	}
	data = append([]byte(nil), dataMagic...)
	data = binary.LittleEndian.AppendUint32(data, uint32(len(mutable)))
	for _, g := range mutable {
		data = binary.LittleEndian.AppendUint32(data, g)
	}
	return wasmbin.Encode(out), append(data, segments...), nil
}

// Data is what PrepareModule moved out of a module.
type Data struct {
	// Globals are the indices of the exported mutable globals, ascending.
	Globals []uint32
	// segments are the encoded data segments.
	segments []byte
}

// ParseData reads the data that PrepareModule returned.
func ParseData(b []byte) (*Data, error) {
	if len(b) < len(dataMagic)+4 || string(b[:len(dataMagic)]) != string(dataMagic) {
		return nil, errors.New("snapshot: module data: bad header (rebuild the runtimes)")
	}
	b = b[len(dataMagic):]
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(len(b)) < 4*uint64(n) {
		return nil, errors.New("snapshot: module data: truncated")
	}
	d := &Data{Globals: make([]uint32, n)}
	for i := range d.Globals {
		d.Globals[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	d.segments = b[4*n:]
	return d, nil
}

// GlobalNames are the export names of the snapshot globals, in index order.
func (d *Data) GlobalNames() []string {
	names := make([]string, len(d.Globals))
	for i, g := range d.Globals {
		names[i] = GlobalPrefix + strconv.FormatUint(uint64(g), 10)
	}
	return names
}

// mutableGlobals lists the indices of the mutable globals a global section
// defines.
func mutableGlobals(payload []byte, imported uint32) ([]uint32, error) {
	r := &wasmbin.Reader{B: payload}
	n := r.U32()
	var out []uint32
	for i := uint32(0); i < n && r.Err == nil; i++ {
		r.Byte() // value type
		if r.Byte() == 1 {
			out = append(out, imported+i)
		}
		r.ConstExpr()
	}
	if r.Err != nil || !r.Done() {
		return nil, fmt.Errorf("malformed global section: %v", r.Err)
	}
	return out, nil
}

// exportGlobals appends an export for each global index to an export
// section.
func exportGlobals(payload []byte, globals []uint32) ([]byte, error) {
	r := &wasmbin.Reader{B: payload}
	n := r.U32()
	entries := r.Pos
	for i := uint32(0); i < n && r.Err == nil; i++ {
		if strings.HasPrefix(r.Name(), GlobalPrefix) {
			return nil, fmt.Errorf("module already exports a name starting with %q", GlobalPrefix)
		}
		r.Byte()
		r.U32()
	}
	if r.Err != nil || !r.Done() {
		return nil, fmt.Errorf("malformed export section: %v", r.Err)
	}
	out := wasmbin.AppendU32(nil, n+uint32(len(globals)))
	out = append(out, payload[entries:]...)
	for _, g := range globals {
		out = wasmbin.AppendName(out, GlobalPrefix+strconv.FormatUint(uint64(g), 10))
		out = append(out, wasmbin.KindGlobal)
		out = wasmbin.AppendU32(out, g)
	}
	return out, nil
}

// appendSegments encodes the active segments of a data section as
// (offset, length, bytes) records.
func appendSegments(data, payload []byte) ([]byte, error) {
	r := &wasmbin.Reader{B: payload}
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		switch flags := r.U32(); flags {
		case 0:
		case 2:
			if mem := r.U32(); mem != 0 {
				return nil, fmt.Errorf("data segment %d is for memory %d", i, mem)
			}
		default:
			return nil, fmt.Errorf("data segment %d is passive (flags %d): its module cannot be snapshotted", i, flags)
		}
		offset, ok := r.ConstExpr()
		if r.Err == nil && !ok {
			return nil, fmt.Errorf("data segment %d: offset is not an i32.const", i)
		}
		b := r.Bytes(int(r.U32()))
		data = binary.LittleEndian.AppendUint32(data, uint32(offset))
		data = binary.LittleEndian.AppendUint32(data, uint32(len(b)))
		data = append(data, b...)
	}
	if r.Err != nil || !r.Done() {
		return nil, fmt.Errorf("malformed data section: %v", r.Err)
	}
	return data, nil
}

// Apply writes the data segments that PrepareModule moved out into mem, as
// instantiation would have.
func (d *Data) Apply(mem api.Memory) error {
	for b := d.segments; len(b) > 0; {
		if len(b) < 8 {
			return errors.New("snapshot: data segments: truncated record")
		}
		offset, n := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
		if uint64(len(b)-8) < uint64(n) {
			return errors.New("snapshot: data segments: truncated record")
		}
		if !mem.Write(offset, b[8:8+n]) {
			return fmt.Errorf("snapshot: data segment at %#x (%d bytes) is outside memory", offset, n)
		}
		b = b[8+n:]
	}
	return nil
}

// globals returns the instance's snapshot globals, in index order.
func (d *Data) globals(mod api.Module) ([]api.MutableGlobal, error) {
	out := make([]api.MutableGlobal, len(d.Globals))
	for i, name := range d.GlobalNames() {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return nil, fmt.Errorf("snapshot: the module does not export mutable global %q (was it prepared with PrepareModule?)", name)
		}
		out[i] = g
	}
	return out, nil
}

// Identity is a digest of everything an interpreter's start-up depends on,
// named after the runtime: a snapshot is valid for one identity only.
// Each part is length-prefixed, so no two lists of parts share a digest.
func Identity(runtime string, parts ...[]byte) string {
	h := sha256.New()
	for _, b := range parts {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return runtime + "-" + hex.EncodeToString(h.Sum(nil))
}
