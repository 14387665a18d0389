package ipc

import (
	"fmt"

	"capsule/runtimes/fileset"
)

// FileChunk is the most content one TypeFileData frame carries: far below
// any maximum frame size the supervisor sets, so that a file of any size
// crosses in frames that neither side must buffer whole.
const FileChunk = 64 << 10

// FileHeader begins a file: a TypeFile control frame. Size bytes of
// content follow in TypeFileData frames, none for a truncated file (which
// only lists its size).
type FileHeader struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Binary    bool   `json:"binary,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// WriteFiles writes files: for each a TypeFile header, then its content
// in TypeFileData frames of at most FileChunk bytes.
func (w *Writer) WriteFiles(files []fileset.File) error {
	for _, f := range files {
		h := FileHeader{Path: f.Path, Size: f.Len(), Binary: f.Binary, Truncated: f.Truncated}
		if err := w.WriteJSON(TypeFile, h); err != nil {
			return err
		}
		for data := f.Data; len(data) > 0 && !f.Truncated; {
			n := min(len(data), FileChunk)
			if err := w.WriteFrame(TypeFileData, data[:n]); err != nil {
				return err
			}
			data = data[n:]
		}
	}
	return nil
}

// FileReceiver assembles files from TypeFile and TypeFileData frames,
// checking every claim the sender makes: each path follows
// fileset.CheckPath, paths come in strictly increasing path order
// (fileset.Compare) and do not collide, each file's content is exactly its declared size, and the
// sender sent (or truncated) exactly what a fileset.Picker with the
// receiver's limits sends. Nothing beyond the limits is ever allocated.
type FileReceiver struct {
	picker *fileset.Picker
	// truncate allows truncated files (files coming back; files passed in
	// are never truncated).
	truncate bool
	paths    fileset.PathSet
	files    []fileset.File
	// missing is how many bytes of the last file are still to come.
	missing int64
	// buffer, when set, provides the memory for a file's content.
	buffer BufferFunc
}

// BufferFunc returns an empty slice with capacity size for the content of a
// file, or nil to have the receiver allocate it.
type BufferFunc func(size int64, binary bool) []byte

// NewFileReceiver returns a receiver of files within lim. Truncated files
// are accepted only when truncate is set.
func NewFileReceiver(lim fileset.Limits, truncate bool) *FileReceiver {
	return &FileReceiver{picker: fileset.NewPicker(lim), truncate: truncate, paths: fileset.PathSet{}}
}

// Add takes one TypeFile or TypeFileData frame.
func (r *FileReceiver) Add(f Frame) error {
	switch f.Type {
	case TypeFile:
		return r.header(f)
	case TypeFileData:
		return r.data(f.Payload)
	}
	return fmt.Errorf("ipc: a %s frame is not part of a file", f.Type)
}

func (r *FileReceiver) header(f Frame) error {
	if r.missing > 0 {
		return fmt.Errorf("ipc: file %q ended %d bytes short", r.files[len(r.files)-1].Path, r.missing)
	}
	var h FileHeader
	if err := DecodeJSON(f, &h); err != nil {
		return err
	}
	if err := fileset.CheckPath(h.Path); err != nil {
		return fmt.Errorf("ipc: %w", err)
	}
	if n := len(r.files); n > 0 && fileset.Compare(r.files[n-1].Path, h.Path) >= 0 {
		return fmt.Errorf("ipc: file %q comes after %q, out of order", h.Path, r.files[n-1].Path)
	}
	if err := r.paths.Add(h.Path); err != nil {
		return fmt.Errorf("ipc: %w", err)
	}
	send, list := r.picker.Pick(h.Size)
	switch {
	case !list:
		return fmt.Errorf("ipc: file %q (%d bytes) is beyond what may be listed", h.Path, h.Size)
	case h.Truncated && (send || !r.truncate):
		return fmt.Errorf("ipc: file %q is marked truncated, and it need not be", h.Path)
	case !h.Truncated && !send:
		return fmt.Errorf("ipc: file %q (%d bytes) is over the limits", h.Path, h.Size)
	}
	file := fileset.File{Path: h.Path, Binary: h.Binary, Truncated: h.Truncated, Size: h.Size}
	if !h.Truncated {
		if r.buffer != nil {
			file.Data = r.buffer(h.Size, h.Binary)
		}
		if int64(cap(file.Data)) != h.Size || len(file.Data) != 0 {
			file.Data = make([]byte, 0, h.Size)
		}
		r.missing = h.Size
	}
	r.files = append(r.files, file)
	return nil
}

func (r *FileReceiver) data(p []byte) error {
	n := len(r.files)
	if n == 0 || int64(len(p)) > r.missing || len(p) == 0 {
		return fmt.Errorf("ipc: %d bytes of file content that no file header announced", len(p))
	}
	r.files[n-1].Data = append(r.files[n-1].Data, p...)
	r.missing -= int64(len(p))
	return nil
}

// Files returns the files received, in path order, once the last is
// complete.
func (r *FileReceiver) Files() ([]fileset.File, error) {
	if r.missing > 0 {
		return nil, fmt.Errorf("ipc: file %q ended %d bytes short", r.files[len(r.files)-1].Path, r.missing)
	}
	return r.files, nil
}

// Count is how many files have begun.
func (r *FileReceiver) Count() int { return len(r.files) }

// ReadFiles reads the frames of n files from in, as the worker reads the
// files passed in after its Request, each into the memory buffer gives
// (when not nil): a runtime receives a file straight into its guest's
// memory, where the code will read it, rather than onto fresh pages of the
// worker's heap first.
func ReadFiles(in *Reader, n int, lim fileset.Limits, buffer BufferFunc) ([]fileset.File, error) {
	r := NewFileReceiver(lim, false)
	r.buffer = buffer
	for r.Count() < n || r.missing > 0 {
		f, err := in.Next()
		if err != nil {
			return nil, fmt.Errorf("ipc: reading the files passed in: %w", err)
		}
		if err := r.Add(f); err != nil {
			return nil, err
		}
	}
	return r.Files()
}
