package fileset

import (
	"errors"
	"fmt"
	"strings"
)

// Collector gathers the files a run returns, as a runtime finds them:
// each path is checked (CheckPath, and no collision with an earlier one),
// then a Picker decides whether the file is sent, listed as truncated, or
// only counted; a file's content is read only when it is sent.
type Collector struct {
	picker *Picker
	paths  PathSet
	// Files are the files to return, in the order added.
	Files []File
	// Unlisted counts the files beyond MaxListed.
	Unlisted int64
	// refused names the first maxRefusals files refused; refusals counts
	// them all.
	refused  []string
	refusals int
}

// NewCollector returns a Collector for lim.
func NewCollector(lim Limits) *Collector {
	return &Collector{picker: NewPicker(lim), paths: PathSet{}}
}

// Add offers the next file, in path order. read gives its content, and
// is called only if the file is sent.
func (c *Collector) Add(path string, size int64, binary bool, read func() ([]byte, error)) {
	if err := CheckPath(path); err != nil {
		c.refuse(err)
		return
	}
	if err := c.paths.Add(path); err != nil {
		c.refuse(err)
		return
	}
	send, list := c.picker.Pick(size)
	switch {
	case !list:
		c.Unlisted++
	case !send:
		c.Files = append(c.Files, File{Path: path, Binary: binary, Truncated: true, Size: size})
	default:
		data, err := read()
		if err != nil {
			c.refuse(fmt.Errorf("file %q could not be read: %w", path, err))
			return
		}
		c.Files = append(c.Files, File{Path: path, Data: data, Binary: binary})
	}
}

// Refuse records a file that cannot be returned, and why.
func (c *Collector) Refuse(err error) { c.refuse(err) }

// maxRefusals bounds how many refused files Err names.
const maxRefusals = 8

func (c *Collector) refuse(err error) {
	c.refusals++
	if len(c.refused) < maxRefusals {
		c.refused = append(c.refused, err.Error())
	}
}

// Err names the files that were not returned for their paths or because
// they could not be read, or is nil.
func (c *Collector) Err() error {
	if c.refusals == 0 {
		return nil
	}
	msg := strings.Join(c.refused, "; ")
	if more := c.refusals - len(c.refused); more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return errors.New("outputs: not returned: " + msg)
}
