package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"capsule/runtimes/fileset"
	"capsule/supervisor"
)

// fileFlags is exec's repeatable --file PATH[=NAME]: host files to pass in.
// It is the one place where capsule reads host files for a call, and it
// reads only those named.
type fileFlags []string

func (f *fileFlags) String() string { return strings.Join(*f, ", ") }

func (f *fileFlags) Set(v string) error {
	if v == "" {
		return fmt.Errorf("want PATH or PATH=NAME")
	}
	*f = append(*f, v)
	return nil
}

// readFiles reads the host files named by --file, each passed in under
// NAME, by default the file's base name. A file whose name is a text type
// and whose content is UTF-8 goes in as text (a string in JavaScript),
// any other as bytes (a Uint8Array).
func readFiles(specs fileFlags, lim supervisor.Limits) ([]fileset.File, error) {
	if len(specs) > lim.MaxFilesInCount {
		return nil, fmt.Errorf("--file: %s given, over the limit of %d (--max-files-in-count)",
			supervisor.Count(int64(len(specs)), "file is", "files are"), lim.MaxFilesInCount)
	}
	max := lim.MaxFilesIn
	var files []fileset.File
	var total int64
	for _, spec := range specs {
		host, name, named := strings.Cut(spec, "=")
		if !named {
			name = filepath.Base(host)
		}
		st, err := os.Stat(host)
		if err != nil {
			return nil, fmt.Errorf("--file %s: %w", spec, err)
		}
		if total += st.Size(); total > int64(max) {
			return nil, fmt.Errorf("--file %s: the files are over the %s limit (--max-files-in)", spec, max)
		}
		data, err := os.ReadFile(host)
		if err != nil {
			return nil, fmt.Errorf("--file %s: %w", spec, err)
		}
		files = append(files, fileset.File{Path: name, Data: data, Binary: !fileset.IsText(name, data)})
	}
	if err := fileset.Check(files); err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	return files, nil
}

// writeOutputs writes the files the code returned under dir, which it
// makes if need be, and says on stderr what it wrote. The paths were
// checked by the supervisor; os.Root keeps every write inside dir even
// should dir hold a symbolic link.
func writeOutputs(a *supervisor.Answer, dir string) error {
	returned := a.ReturnedFiles()
	if dir == "" {
		if len(returned) > 0 {
			fmt.Fprintf(os.Stderr, "capsule: the code returned %s; --outputs DIR writes them\n", supervisor.Count(int64(len(returned)), "file", "files"))
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--outputs: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("--outputs: %w", err)
	}
	defer root.Close()
	for _, f := range returned {
		if d := path.Dir(f.Path); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("--outputs: %w", err)
			}
		}
		if err := root.WriteFile(f.Path, f.Data, 0o644); err != nil {
			return fmt.Errorf("--outputs: %w", err)
		}
		fmt.Fprintf(os.Stderr, "capsule: wrote %s (%d bytes)\n", filepath.Join(dir, f.Path), len(f.Data))
	}
	return nil
}
