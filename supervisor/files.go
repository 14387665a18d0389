package supervisor

import (
	"fmt"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
)

// checkFiles refuses, before anything runs, files passed in that break a
// path rule or do not fit the limits; nil means they may go.
func (s *Supervisor) checkFiles(req Request) *Answer {
	if len(req.Files) == 0 {
		return nil
	}
	if err := fileset.Check(req.Files); err != nil {
		return errorAnswer("FilesError", err.Error())
	}
	lim := s.cfg.Limits
	if len(req.Files) > lim.MaxFilesInCount {
		return filesCountAnswer(&FilesCountError{N: len(req.Files), Max: lim.MaxFilesInCount})
	}
	n := fileset.TotalLen(req.Files)
	if n > int64(lim.MaxFilesIn) {
		return limitAnswer(runtimes.LimitFilesIn, "FilesInLimitError",
			fmt.Sprintf("files_in: the files passed in are %d bytes in all, over the %s limit", n, lim.MaxFilesIn))
	}
	if l, _ := s.cfg.Languages.Lookup(req.Language); !l.Files.InScratch {
		return nil
	}
	if lim.Scratch == 0 {
		return errorAnswer("FilesError", "files: this server gives Python no writable directory (--scratch 0), so no file can be passed in")
	}
	if n > int64(lim.Scratch) {
		return limitAnswer(runtimes.LimitScratch, "ScratchLimitError",
			fmt.Sprintf("scratch: the files passed in are %d bytes, over the %s of a Python call's /tmp", n, lim.Scratch))
	}
	return nil
}

// FilesCountError refuses a call that passes in more files than
// --max-files-in-count allows.
type FilesCountError struct {
	N, Max int
}

func (e *FilesCountError) Error() string {
	return fmt.Sprintf("files_in: %s passed in, over the limit of %d per call (--max-files-in-count)",
		Count(int64(e.N), "file is", "files are"), e.Max)
}

// filesCountAnswer refuses a call that passes in too many files.
func filesCountAnswer(e *FilesCountError) *Answer {
	return limitAnswer(runtimes.LimitFilesIn, "FilesInLimitError", e.Error())
}
