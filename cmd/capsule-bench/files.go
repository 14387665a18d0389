package main

import (
	"fmt"
	"strings"
	"time"
)

// targetFilesOverheadMS bounds what a 5 MiB CSV in and a 5 MiB CSV out add
// to a call's p50.
const targetFilesOverheadMS = 60.0

// filesCSVBytes is the size of the CSV passed in and returned.
const filesCSVBytes = 5 << 20

// filesCode is the code of each language's files row: it copies data.csv,
// when there is one, to the files returned, so that the call without
// files runs the same code and differs only in the files.
var filesCode = map[string]string{
	toolPython: "import os, shutil\nif os.path.exists('data.csv'):\n    shutil.copyfile('data.csv', 'outputs/out.csv')\nlen(os.listdir('outputs'))",
	toolJavaScript: "if (typeof files !== 'undefined') outputs['out.csv'] = files['data.csv'];\n" +
		"Object.keys(outputs).length",
}

// filesRow is one language's calls with and without the files.
type filesRow struct {
	language                  string
	with, without             []float64 // client round trips, ms
	serverWith, serverWithout []float64 // duration_ms
	cpuWith, cpuWithout       cpuTimes
}

// csvOf makes a CSV of about n bytes.
func csvOf(n int) string {
	var b strings.Builder
	b.WriteString("id,name,amount,date\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d,customer %d,%d.%02d,2026-%02d-%02d\n", i, i%977, i%10007, i%100, 1+i%12, 1+i%28)
	}
	return b.String()[:n]
}

// filesOverhead alternates calls with a 5 MiB CSV in (and so out) and
// calls of the same code without it, one at a time with the usual pause,
// and compares their p50s.
func (b *bench) filesOverhead() error {
	logf("starting a server with the default pools, for the files rows")
	s, err := startServer(b.bin, b.cache)
	if err != nil {
		return err
	}
	defer s.close()
	csv := csvOf(filesCSVBytes)
	for _, l := range languages {
		row, err := b.filesRow(s, l.name, l.tool, csv)
		if err != nil {
			return err
		}
		b.r.files = append(b.r.files, row)
	}
	return nil
}

func (b *bench) filesRow(s *server, language, tool, csv string) (filesRow, error) {
	logf("files: %s, %d calls with a %d-byte CSV in and out, %d without, alternating", language, b.o.n, len(csv), b.o.n)
	row := filesRow{language: language}
	code := filesCode[tool]
	withFiles := map[string]any{"code": code, "files": map[string]any{"data.csv": csv}}
	without := map[string]any{"code": code}
	for range b.o.warmup {
		for _, args := range []map[string]any{withFiles, without} {
			if _, err := s.callArgs(tool, args); err != nil {
				return row, err
			}
			time.Sleep(b.o.pause)
		}
	}
	time.Sleep(time.Second)
	for range b.o.n {
		for _, c := range []struct {
			args         map[string]any
			wall, server *[]float64
			cpu          *cpuTimes
			files        int
		}{
			{withFiles, &row.with, &row.serverWith, &row.cpuWith, 1},
			{without, &row.without, &row.serverWithout, &row.cpuWithout, 0},
		} {
			before, err := readCPU(s.pid())
			if err != nil {
				return row, err
			}
			a, err := s.callArgs(tool, c.args)
			if err != nil {
				return row, err
			}
			if err := a.checkFiles(c.files, len(csv)); err != nil {
				return row, fmt.Errorf("%s: %w", tool, err)
			}
			// The pause reaps the call's worker: read the CPU after it.
			time.Sleep(b.o.pause)
			after, err := readCPU(s.pid())
			if err != nil {
				return row, err
			}
			*c.wall = append(*c.wall, ms(a.wall))
			*c.server = append(*c.server, a.durationMS())
			*c.cpu = addCPU(*c.cpu, perCall(before, after, b.o.n))
		}
	}
	return row, nil
}

// checkFiles fails unless the answer returned n files of size bytes.
func (a answer) checkFiles(n, size int) error {
	if len(a.st.Files) != n || (n > 0 && a.st.Files[0].Size != int64(size)) {
		return fmt.Errorf("the answer lists %d files (%+v), want %d of %d bytes", len(a.st.Files), a.st.Files, n, size)
	}
	return nil
}

func addCPU(a, b cpuTimes) cpuTimes {
	return cpuTimes{self: a.self + b.self, children: a.children + b.children}
}

func (r *report) printFiles(p printer) {
	p("### Files")
	p("")
	p("A %s CSV passed in as `files` and returned (Python copies `data.csv` to `outputs/out.csv`, "+
		"JavaScript sets `outputs['out.csv'] = files['data.csv']`), against the same code called without "+
		"the file; the two calls alternate, one at a time with the usual pause, %d of each after %d "+
		"unmeasured. Round trip measured by the client, which sends the CSV as JSON and receives it as an "+
		"embedded text resource; CPU/call is the server's own and its workers'.", fmtBytes(filesCSVBytes), r.opts.n, r.opts.warmup)
	p("")
	p("| language | p50 without | p50 with | p50 difference | server p50 without → with | CPU/call without → with | target | |")
	p("|---|---:|---:|---:|---:|---:|---:|---|")
	for _, f := range r.files {
		without, with := percentile(f.without, 50), percentile(f.with, 50)
		diff := with - without
		p("| %s | %s | %s | %+.1f ms | %s → %s | %s → %s | ≤ +%s | %s |", f.language, fmtMS(without), fmtMS(with), diff,
			fmtMS(percentile(f.serverWithout, 50)), fmtMS(percentile(f.serverWith, 50)),
			fmtMS(ms(f.cpuWithout.self+f.cpuWithout.children)), fmtMS(ms(f.cpuWith.self+f.cpuWith.children)),
			fmtMS(targetFilesOverheadMS), verdict(diff <= targetFilesOverheadMS))
	}
	p("")
}

func fmtBytes(n int) string { return fmt.Sprintf("%d MiB", n>>20) }
