package javascript

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unsafe"

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

// FileBuffer implements runtimes.FileReceiver: a file's content is received
// into a block of guest memory that becomes the file's value without
// another copy: for bytes, the ArrayBuffer's own memory; for text, the
// characters of the binary object QTS_bjson_decode reads (text.go), after
// room for its header. Nil when the guest has no room, or the file cannot
// be one string.
func (in *instance) FileBuffer(size int64, binary bool) (b []byte) {
	head := int64(bjsonHeaderLen)
	if binary {
		head = 0
	}
	if size <= 0 || size > maxStringChars {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(trap); !ok {
				panic(r)
			}
			b = nil // Run will meet the same lack of memory, and say so
		}
	}()
	p := in.call(in.fn.malloc, uint32(head+size))
	if p == 0 {
		return nil
	}
	view, ok := in.mem.Read(p+uint32(head), uint32(size))
	if !ok {
		return nil
	}
	if in.received == nil {
		in.received = map[*byte]uint32{}
	}
	in.received[unsafe.SliceData(view)] = p
	return view[:0]
}

func (in *instance) addFile(f fileset.File) *runtimes.ErrorInfo {
	path := in.newString(f.Path) // a checked path holds no NUL
	defer in.freeValue(path)
	p, inGuest := in.received[unsafe.SliceData(f.Data)]
	if f.Binary {
		if !inGuest {
			p = in.malloc(uint32(max(len(f.Data), 1)))
			in.mem.Write(p, f.Data)
		}
		// The ArrayBuffer takes p, and frees it with free().
		return in.callAddFile(path, in.call(in.fn.newArrayBuffer, in.jsctx, p, uint32(len(f.Data))), kindBytes)
	}
	chars, narrow := textChars(f.Data)
	if chars > maxStringChars {
		return &runtimes.ErrorInfo{Type: "RangeError", Message: fmt.Sprintf("files: %q has %d characters, more than a JavaScript string can hold (%d); pass it as base64 bytes", f.Path, chars, maxStringChars)}
	}
	var v, exc uint32
	if inGuest && chars == len(f.Data) {
		// ASCII: the characters are the bytes received, in place.
		v, exc = in.decodeText(p, chars, narrow)
	} else {
		v, exc = in.newText(f.Data, chars, narrow)
		if inGuest {
			in.callv(in.fn.free, p) // only now: newText reads f.Data, in p
		}
	}
	if exc != 0 {
		return in.describe(exc)
	}
	return in.callAddFile(path, v, kindText)
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
		runs, err := stringRuns(in.mem, e.value)
		if err != nil {
			c.Add(e.path, 0, false, func() ([]byte, error) { return nil, err })
			return
		}
		n := stringUTF8Len(runs)
		c.Add(e.path, int64(n), false, func() ([]byte, error) { return stringUTF8(runs, n), nil })
	case kindBytes:
		n := in.call(in.fn.getArrayBufferLength, in.jsctx, e.value)
		c.Add(e.path, int64(n), true, func() ([]byte, error) { return in.readArrayBuffer(e.value, n) })
	default:
		c.Refuse(&fileset.PathError{Path: e.path, Rule: in.stringOf(e.value)})
	}
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
