package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero/api"

	"capsule/runtimes/internal/guestmem"
)

// Layout of an image file: a header of HeaderSize bytes (JSON, padded with
// NULs), then the linear memory, byte for byte, at HeaderSize. Only runs of
// chunks that hold a non-zero byte are written; the rest are holes, and a
// restore leaves them as the fresh instance's zero pages.
const (
	HeaderSize = 64 << 10
	chunk      = 64 << 10 // a wasm page; also a multiple of any OS page size
	imageMagic = "capsule-snapshot-1"
)

// Header describes an image.
type Header struct {
	Magic string `json:"magic"`
	// Key names what the image was made from (module, start-up program,
	// limits); a worker refuses an image whose key is not the one it
	// expects.
	Key string `json:"key"`
	// Pages is the memory size in wasm pages.
	Pages uint32 `json:"pages"`
	// Globals holds the snapshot globals' values, in index order.
	Globals []uint64 `json:"globals"`
	// Runs lists the written stretches of memory as [first chunk, chunks].
	Runs [][2]uint32 `json:"runs"`
	// State is the runtime's own record of the start-up (guest pointers it
	// needs afterwards, for instance).
	State json.RawMessage `json:"state,omitempty"`
}

// Capture writes an image of mod's memory and snapshot globals to f, which
// must be empty. The instance must be idle: no call into it in progress.
func Capture(f *os.File, mod api.Module, d *Data, key string, state any) error {
	gs, err := d.globals(mod)
	if err != nil {
		return err
	}
	h := Header{Magic: imageMagic, Key: key}
	for _, g := range gs {
		h.Globals = append(h.Globals, g.Get())
	}
	if state != nil {
		if h.State, err = json.Marshal(state); err != nil {
			return err
		}
	}
	mem := mod.Memory()
	if mem == nil {
		return errors.New("snapshot: the module has no memory")
	}
	size := mem.Size()
	h.Pages = size / chunk
	buf, _ := mem.Read(0, size)
	zero := make([]byte, chunk)
	for c := uint32(0); c < h.Pages; {
		if bytes.Equal(buf[c*chunk:(c+1)*chunk], zero) {
			c++
			continue
		}
		start := c
		for c < h.Pages && !bytes.Equal(buf[c*chunk:(c+1)*chunk], zero) {
			c++
		}
		h.Runs = append(h.Runs, [2]uint32{start, c - start})
		if _, err := f.WriteAt(buf[start*chunk:c*chunk], HeaderSize+int64(start)*chunk); err != nil {
			return fmt.Errorf("snapshot: writing the image: %w", err)
		}
	}
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if len(head) > HeaderSize {
		return fmt.Errorf("snapshot: header of %d bytes does not fit in %d", len(head), HeaderSize)
	}
	if _, err := f.WriteAt(head, 0); err != nil {
		return fmt.Errorf("snapshot: writing the image: %w", err)
	}
	return f.Truncate(HeaderSize + int64(size))
}

// Image is an image file opened for restoring.
type Image struct {
	Header
	f *os.File
}

// Open reads the header of the image in f and checks it was made for key.
// Restore reads the rest from f, which the caller keeps open.
func Open(f *os.File, key string) (*Image, error) {
	head := make([]byte, HeaderSize)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("snapshot: reading the image header: %w", err)
	}
	var h Header
	if err := json.Unmarshal(bytes.TrimRight(head, "\x00"), &h); err != nil {
		return nil, fmt.Errorf("snapshot: bad image header: %w", err)
	}
	if h.Magic != imageMagic {
		return nil, errors.New("snapshot: not an image file")
	}
	if h.Key != key {
		return nil, fmt.Errorf("snapshot: the image was made for %q, not %q", h.Key, key)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() != HeaderSize+int64(h.Pages)*chunk {
		return nil, errors.New("snapshot: image size does not match its header")
	}
	for _, r := range h.Runs {
		if uint64(r[0])+uint64(r[1]) > uint64(h.Pages) {
			return nil, errors.New("snapshot: image run outside its memory")
		}
	}
	return &Image{Header: h, f: f}, nil
}

// MemoryBytes is the size of the memory the image holds.
func (img *Image) MemoryBytes() uint64 { return uint64(img.Pages) * chunk }

// Restore makes a fresh instance of the prepared module (instantiated with
// no start function run) what the captured one was: it grows the memory to
// the image's size, reads the image's runs into it, and sets the globals.
//
// Reading beats mapping the image copy-on-write, although mapping copies
// nothing up front: an interpreter's first run writes to pages all over
// its heap (reference counts), and each such page is then a copy-on-write
// fault. Measured on a 2-vCPU VM: a copy-on-write fault cost 57 µs, so a
// trivial Python run took 16-25 ms of CPU faulting; reading the 9 MiB that
// CPython's image holds into the guest memory, advised for huge pages
// (guestmem.AdviseHugePages), took 5-7 ms, after which the run took 2-6 ms.
func (img *Image) Restore(mod api.Module, d *Data) error {
	gs, err := d.globals(mod)
	if err != nil {
		return err
	}
	if len(gs) != len(img.Globals) {
		return fmt.Errorf("snapshot: image has %d globals, the module %d", len(img.Globals), len(gs))
	}
	m := mod.Memory()
	if cur := m.Size() / chunk; cur < img.Pages {
		if _, ok := m.Grow(img.Pages - cur); !ok {
			return fmt.Errorf("the memory limit is below the %s the interpreter holds after its start-up", formatMiB(img.MemoryBytes()))
		}
	} else if cur > img.Pages {
		return errors.New("snapshot: the fresh instance's memory is larger than the image")
	}
	if whole, ok := m.Read(0, img.Pages*chunk); ok {
		guestmem.AdviseHugePages(whole)
	}
	for _, r := range img.Runs {
		buf, ok := m.Read(r[0]*chunk, r[1]*chunk)
		if !ok {
			return errors.New("snapshot: image run outside the memory")
		}
		if _, err := img.f.ReadAt(buf, HeaderSize+int64(r[0])*chunk); err != nil {
			return fmt.Errorf("snapshot: reading the image: %w", err)
		}
	}
	for i, g := range gs {
		g.Set(img.Globals[i])
	}
	return nil
}

func formatMiB(n uint64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
