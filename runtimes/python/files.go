package python

import (
	"context"
	"fmt"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
)

// Run puts the files passed in into the scratch directory, beside an
// empty outputs/, runs the code (see run), and then, however the run
// ended (a result, an exception, a limit, the deadline), takes back what
// the code left in outputs/.
func (in *instance) Run(ctx context.Context, req runtimes.Request) runtimes.Outcome {
	if out, ok := in.putFiles(req.Files); !ok {
		return out
	}
	out := in.run(ctx, req)
	in.collectOutputs(&out)
	return out
}

// putFiles makes outputs/ and writes the files passed in. It reports false
// with the outcome to answer when they do not fit.
func (in *instance) putFiles(files []fileset.File) (runtimes.Outcome, bool) {
	if in.scratch == nil {
		if len(files) > 0 {
			return errorOutcome("FilesError", "files: this server gives Python no writable directory (--scratch 0), so no file can be passed in"), false
		}
		return runtimes.Outcome{}, true
	}
	if errno := in.scratch.Mkdir(fileset.OutputsDir, 0o755); errno != 0 {
		return errorOutcome("FilesError", fmt.Sprintf("files: making %s/%s: %v", ScratchDir, fileset.OutputsDir, errno)), false
	}
	for _, f := range files {
		if errno := in.scratch.putFile(f.Path, f.Data); errno != 0 {
			if in.files.scratchFull.Load() {
				return runtimes.Outcome{Limit: runtimes.LimitScratch, Error: &runtimes.ErrorInfo{Type: "ScratchLimitError",
					Message: fmt.Sprintf("scratch: the files passed in (%d bytes) do not fit in the scratch limit of %s",
						fileset.TotalLen(files), runtimes.FormatBytes(in.engine.scratch))}}, false
			}
			return errorOutcome("FilesError", fmt.Sprintf("files: writing %q: %v", f.Path, errno)), false
		}
	}
	return runtimes.Outcome{}, true
}

// collectOutputs adds to out the files under /tmp/outputs, in path order,
// within the engine's limits. A guest still running past its deadline may
// change them meanwhile: each file is read as it is at that moment.
func (in *instance) collectOutputs(out *runtimes.Outcome) {
	if in.scratch == nil {
		return
	}
	w := in.scratch.listFiles(fileset.OutputsDir)
	c := fileset.NewCollector(in.engine.filesOut)
	for _, dir := range w.tooDeep {
		c.Refuse(&fileset.PathError{Path: dir + "/", Rule: fmt.Sprintf("files in this directory would be more than %d levels or %d bytes deep", fileset.MaxDepth, fileset.MaxPathBytes)})
	}
	for _, e := range w.files {
		c.Add(e.path, e.size, false, func() ([]byte, error) {
			data, errno := in.scratch.readFile(fileset.OutputsDir+"/"+e.path, e.size)
			if errno != 0 {
				return nil, errno
			}
			return data, nil
		})
	}
	out.Files, out.FilesUnlisted = c.Files, w.unlisted+c.Unlisted
	if err := c.Err(); err != nil && out.Error == nil {
		out.Error = &runtimes.ErrorInfo{Type: "OutputFileError", Message: err.Error()}
	}
}
