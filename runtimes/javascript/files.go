package javascript

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
)

// collectBudget is how long the code that lists `outputs` may run: after
// the deadline too, and however little of the run's time is left. Listing
// runs no user code but a Proxy's traps, which this bounds.
const collectBudget = 100 * time.Millisecond

// Kinds of value in the list collectOutputs returns (prelude.js).
const (
	kindText     = 0
	kindBytes    = 1
	kindTextNUL  = 2 // more text after a NUL, for a file passed in
	kindRejected = 3 // not a file's content; the value says why
)

// putFiles gives the code the files passed in, as the frozen global
// `files`: path → string, or Uint8Array for bytes.
func (in *instance) putFiles(files []fileset.File) *runtimes.ErrorInfo {
	if len(files) == 0 {
		return nil
	}
	for _, f := range files {
		if err := in.addFile(f); err != nil {
			return err
		}
	}
	if _, exc := in.callJS(in.methods.SealFiles, in.prelude); exc != 0 {
		return in.describe(exc)
	}
	return nil
}

func (in *instance) addFile(f fileset.File) *runtimes.ErrorInfo {
	path := in.newString(f.Path) // a checked path holds no NUL
	defer in.freeValue(path)
	if f.Binary {
		return in.callAddFile(path, in.newArrayBuffer(f.Data), kindBytes)
	}
	// QTS_NewString reads a C string: text goes in NUL-free pieces, each
	// written straight from the file's bytes.
	kind := float64(kindText)
	for data := f.Data; ; kind = kindTextNUL {
		piece := data
		if i := bytes.IndexByte(data, 0); i >= 0 {
			piece = data[:i]
		}
		if err := in.callAddFile(path, in.newStringBytes(piece), kind); err != nil {
			return err
		}
		if len(piece) == len(data) {
			return nil
		}
		data = data[len(piece)+1:]
	}
}

// callAddFile calls the prelude's addFile and frees value.
func (in *instance) callAddFile(path, value uint32, kind float64) *runtimes.ErrorInfo {
	k := in.newFloat64(kind)
	_, exc := in.callJS(in.methods.AddFile, in.prelude, path, value, k)
	in.freeValue(k)
	in.freeValue(value)
	if exc != 0 {
		return in.describe(exc)
	}
	return nil
}

// newArrayBuffer makes a JSValue* ArrayBuffer holding a copy of data.
func (in *instance) newArrayBuffer(data []byte) uint32 {
	p := in.malloc(uint32(max(len(data), 1)))
	in.mem.Write(p, data)
	// The ArrayBuffer takes p, and frees it with free().
	return in.call(in.fn.newArrayBuffer, in.jsctx, p, uint32(len(data)))
}

// readArrayBuffer copies a JSValue* ArrayBuffer's bytes out of the guest.
func (in *instance) readArrayBuffer(v uint32, n uint32) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	p := in.call(in.fn.getArrayBuffer, in.jsctx, v) // a malloc'd copy
	if p == 0 {
		return nil, errNoMemory
	}
	defer in.callv(in.fn.free, p)
	b, ok := in.mem.Read(p, n)
	if !ok {
		return nil, errNoMemory
	}
	return slices.Clone(b), nil
}

// outputEntry is one entry of the prelude's list of outputs.
type outputEntry struct {
	path  string
	kind  int
	value uint32 // JSValue*
}

// collectOutputs adds to out the files the code left in the global
// `outputs`, in path order, within the engine's limits. A run that ended
// in a trap has no usable interpreter left, and returns none.
func (in *instance) collectOutputs(out *runtimes.Outcome) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(trap); !ok {
				panic(r)
			}
			out.Files = nil
			if out.Error == nil {
				out.Error = &runtimes.ErrorInfo{Type: "OutputFileError", Message: "outputs: could not be read: the interpreter stopped"}
			}
		}
	}()
	in.allowCollecting()
	max := in.newFloat64(fileset.MaxListed)
	list, exc := in.callJS(in.methods.CollectOutputs, in.prelude, max)
	in.freeValue(max)
	if exc != 0 {
		if e := in.describe(exc); out.Error == nil {
			out.Error = &runtimes.ErrorInfo{Type: "OutputFileError", Message: "outputs: could not be read: " + e.Message}
		}
		return
	}
	defer in.freeValue(list)
	entries, unlisted := in.outputEntries(list)
	defer func() {
		for _, e := range entries {
			in.freeValue(e.value)
		}
	}()
	c := fileset.NewCollector(in.eng.filesOut)
	for _, e := range entries {
		in.offer(c, e)
	}
	out.Files, out.FilesUnlisted = c.Files, unlisted+c.Unlisted
	if err := c.Err(); err != nil && out.Error == nil {
		out.Error = &runtimes.ErrorInfo{Type: "OutputFileError", Message: err.Error()}
	}
}

// allowCollecting gives the listing of outputs its own time, whatever is
// left of the run's: a run stopped at its deadline still returns its files.
func (in *instance) allowCollecting() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(in.run), collectBudget)
	time.AfterFunc(collectBudget, cancel)
	in.run = ctx
	in.deadline, in.hasDeadline = time.Now().Add(collectBudget), true
	in.interrupted = false
}

// outputEntries reads the prelude's list: the count of entries left out,
// then (path, kind, value) for each, sorted here by path.
func (in *instance) outputEntries(list uint32) ([]outputEntry, int64) {
	n := int(in.numberProp(list, "length"))
	unlisted := int64(in.numberAt(list, 0))
	var entries []outputEntry
	for i := 1; i+2 < n; i += 3 {
		path := in.propAt(list, i)
		entries = append(entries, outputEntry{
			path:  in.stringOf(path),
			kind:  int(in.numberAt(list, i+1)),
			value: in.propAt(list, i+2),
		})
		in.freeValue(path)
	}
	slices.SortFunc(entries, func(a, b outputEntry) int { return fileset.Compare(a.path, b.path) })
	return entries, unlisted
}

// offer gives one entry to the collector.
func (in *instance) offer(c *fileset.Collector, e outputEntry) {
	switch e.kind {
	case kindText:
		data := in.textOf(e.value)
		c.Add(e.path, int64(len(data)), false, func() ([]byte, error) { return data, nil })
	case kindBytes:
		n := in.call(in.fn.getArrayBufferLength, in.jsctx, e.value)
		c.Add(e.path, int64(n), true, func() ([]byte, error) { return in.readArrayBuffer(e.value, n) })
	default:
		c.Refuse(&fileset.PathError{Path: e.path, Rule: in.stringOf(e.value)})
	}
}

// textOf is a string output's text as UTF-8, NULs included. QTS_GetString
// gives it as a C string, which a NUL in the text does not end: the
// string's length in UTF-16 units says where it ends. A lone surrogate,
// which UTF-8 cannot hold, becomes U+FFFD, as TextEncoder makes it.
func (in *instance) textOf(v uint32) []byte {
	units := int(in.numberProp(v, "length"))
	c := in.call(in.fn.getString, in.jsctx, v)
	if c == 0 {
		return []byte{}
	}
	defer in.callv(in.fn.freeCString, in.jsctx, c)
	b, _ := in.mem.Read(c, in.mem.Size()-c)
	b = b[:utf8Len(b, units)]
	if utf8.Valid(b) {
		return slices.Clone(b)
	}
	return []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// utf8Len is how many bytes of b, UTF-8 as QuickJS writes it (a lone
// surrogate as three bytes of its own), hold the first units UTF-16 units.
// Runs of ASCII, one unit a byte, go eight bytes at a time.
func utf8Len(b []byte, units int) int {
	i := 0
	for ; units > 0 && i < len(b); units-- {
		if units >= 8 && i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 == 0 {
			i, units = i+8, units-7 // and one more by the loop
			continue
		}
		switch c := b[i]; {
		case c < 0x80:
			i++
		case c >= 0xf0: // a surrogate pair: two units
			i += 4
			units--
		case c >= 0xe0:
			i += 3
		case c >= 0xc0:
			i += 2
		default: // not a first byte, which QuickJS does not write
			i++
		}
	}
	return min(i, len(b))
}

// propAt is element i of an array (a JSValue* to free).
func (in *instance) propAt(arr uint32, i int) uint32 {
	return in.getProp(arr, strconv.Itoa(i))
}

func (in *instance) numberAt(arr uint32, i int) float64 {
	v := in.propAt(arr, i)
	defer in.freeValue(v)
	return in.float64Of(v)
}

func (in *instance) numberProp(obj uint32, key string) float64 {
	v := in.getProp(obj, key)
	defer in.freeValue(v)
	return in.float64Of(v)
}

// float64Of is a JSValue*'s number (NaN for what is not one).
func (in *instance) float64Of(v uint32) float64 {
	return api.DecodeF64(in.call64(in.fn.getFloat64, in.jsctx, v))
}
