package python

import (
	"fmt"
	"slices"
	"strings"

	"capsule/runtimes"
)

// Language describes Python to the rest of capsule (runtimes.Language):
// its tool, its compile step, its snapshots and their variants, and its
// packages.
func Language() runtimes.Language {
	return runtimes.Language{
		Name: runtimes.Python,
		Tool: runtimes.Tool{
			Name:     "execute_python",
			Title:    "Run Python",
			InputsIn: "a global variable in Python",
			About: "Runs Python 3.11 code (CPython and its standard library, with sqlite3, zlib, lzma, bz2, and " +
				"zoneinfo with the IANA time zones (local time is UTC unless the code sets TZ and calls time.tzset); no pandas, no scipy, no pip installs, " +
				"no threads, no subprocesses) as a fresh script. stdout, stderr and the value of the last expression (like a " +
				"notebook cell: its repr, and exact JSON where it maps) come back.",
			Colours: [2]string{"#3776ab", "#ffd43b"},
		},
		Built:       Built,
		Compile:     Compile,
		Identity:    VariantIdentity,
		Variants:    VariantNames(),
		VariantsFor: VariantsFor,
		OwnModule:   OwnModule,
		Packages: &runtimes.Packages{
			Bundled: bundledList,
			BuiltIn: builtIn,
			Open:    openChecked,
		},
		Files: runtimes.Files{
			InScratch: true,
			Argument:  "written into /tmp, the working directory, before the code runs (subdirectories are made)",
			Usage: "Files: `files` passes files in (see its description); the code opens them by relative path. " +
				"Whatever the code leaves in /tmp/outputs/ (it exists, empty) is returned; %s" +
				"Example: files={\"sales.csv\": \"region,amount\\nnorth,10\\nsouth,5\\n\"} and code " +
				"`import csv, collections\\nt = collections.Counter()\\nfor r in csv.DictReader(open('sales.csv')):\\n" +
				"    t[r['region']] += float(r['amount'])\\nwith open('outputs/summary.csv', 'w', newline='') as f:\\n" +
				"    csv.writer(f).writerows([('region', 'total'), *sorted(t.items())])`",
			NoScratch:   "Files cannot be passed in or returned: this server gives Python no writable directory.",
			LargeOutput: "write large data to a file in /tmp/outputs/",
		},
	}
}

// bundledList names the bundled packages as a call imports them, each with
// its upstream version: "attr/attrs 22.2.0, bs4 4.11.2, ...".
func bundledList() ([]string, error) {
	pkgs, err := Bundled()
	if err != nil {
		return nil, err
	}
	items := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		items = append(items, strings.Join(p.Modules, "/")+" "+p.UpstreamVersion())
	}
	slices.Sort(items)
	return items, nil
}

// builtIn says what is built into the interpreter beyond the standard
// library: numpy, when the build has it.
func builtIn() string {
	v := NumpyVersion()
	if v == "" {
		return ""
	}
	return fmt.Sprintf("numpy %s is built in (numpy.linalg without BLAS, numpy.fft, numpy.random, "+
		"numpy.polynomial, numpy.ma; 32-bit: its default int is int32, and no floating-point errors "+
		"are signalled). ", v)
}

// openChecked opens the operator's packages at path as ids would read them
// (nil: as this process), verifies them, and returns their importable
// names and digest.
func openChecked(path string, ids *runtimes.IDs) ([]string, string, error) {
	var reader *Reader
	if ids != nil {
		reader = &Reader{UID: ids.UID, GID: ids.GID}
	}
	pk, err := OpenPackagesAs(path, reader)
	if err != nil {
		return nil, "", err
	}
	defer pk.Close()
	if err := pk.Verify(); err != nil {
		return nil, "", err
	}
	return pk.Names, pk.Digest(), nil
}
