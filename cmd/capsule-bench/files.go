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
	with, without             []float64 // round trips of the raw JSON-RPC client, ms
	serverWith, serverWithout []float64 // duration_ms
	cpuWith, cpuWithout       cpuTimes
	// mcpGoWith and mcpGoWithout are the round trips of mcp-go's client.
	mcpGoWith, mcpGoWithout []float64
}

// caller makes tool calls to a server it started.
type caller interface {
	callArgs(tool string, args map[string]any) (answer, error)
	pid() int
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
// and compares their p50s: first through the raw JSON-RPC client, with
// the server's CPU, then through mcp-go's client, each with a server of
// its own.
func (b *bench) filesOverhead() error {
	csv := csvOf(filesCSVBytes)
	rows := map[string]*filesRow{}
	logf("starting a server with the default pools and a raw JSON-RPC client, for the files rows")
	raw, err := startRawClient(b.bin, b.cache)
	if err != nil {
		return err
	}
	defer raw.close()
	for _, l := range languages {
		row := &filesRow{language: l.name}
		rows[l.name] = row
		b.r.files = append(b.r.files, row)
		if err := b.filesCalls(raw, l.tool, csv, &row.with, &row.without, row); err != nil {
			return err
		}
	}
	raw.close()
	logf("the same through mcp-go's client")
	s, err := startServer(b.bin, b.cache)
	if err != nil {
		return err
	}
	defer s.close()
	for _, l := range languages {
		row := rows[l.name]
		if err := b.filesCalls(s, l.tool, csv, &row.mcpGoWith, &row.mcpGoWithout, nil); err != nil {
			return err
		}
	}
	return nil
}

// filesCalls makes the calls of one files row through c: their round
// trips go to with and without, and when row is not nil, the server's
// duration_ms and CPU to it.
func (b *bench) filesCalls(c caller, tool, csv string, with, without *[]float64, row *filesRow) error {
	logf("files: %s, %d calls with a %d-byte CSV in and out, %d without, alternating", tool, b.o.n, len(csv), b.o.n)
	code := filesCode[tool]
	withFiles := map[string]any{"code": code, "files": map[string]any{"data.csv": csv}}
	withoutFiles := map[string]any{"code": code}
	for range b.o.warmup {
		for _, args := range []map[string]any{withFiles, withoutFiles} {
			if _, err := c.callArgs(tool, args); err != nil {
				return err
			}
			time.Sleep(b.o.pause)
		}
	}
	time.Sleep(time.Second)
	var scratch filesRow // what goes nowhere when row is nil
	if row == nil {
		row = &scratch
	}
	for range b.o.n {
		for _, k := range []struct {
			args   map[string]any
			wall   *[]float64
			server *[]float64
			cpu    *cpuTimes
			files  int
		}{
			{withFiles, with, &row.serverWith, &row.cpuWith, 1},
			{withoutFiles, without, &row.serverWithout, &row.cpuWithout, 0},
		} {
			before, err := readCPU(c.pid())
			if err != nil {
				return err
			}
			a, err := c.callArgs(tool, k.args)
			if err != nil {
				return err
			}
			if err := a.checkFiles(k.files, len(csv)); err != nil {
				return fmt.Errorf("%s: %w", tool, err)
			}
			// The pause reaps the call's worker: read the CPU after it.
			time.Sleep(b.o.pause)
			after, err := readCPU(c.pid())
			if err != nil {
				return err
			}
			*k.wall = append(*k.wall, ms(a.wall))
			*k.server = append(*k.server, a.durationMS())
			*k.cpu = addCPU(*k.cpu, perCall(before, after, b.o.n))
		}
	}
	return nil
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
		"unmeasured. Round trip: measured by a raw JSON-RPC client on the server's stdio, from the request's "+
		"first byte written (encoded beforehand) to the response's last byte read (decoded afterwards), so "+
		"it is what the server and the pipe cost; CPU/call is the server's own and its workers'. The last "+
		"column is the same difference through mcp-go's client, with a server of its own, which decodes "+
		"each response several times over.", fmtBytes(filesCSVBytes), r.opts.n, r.opts.warmup)
	p("")
	p("| language | p50 without | p50 with | p50 difference | server p50 without → with | CPU/call without → with | target | | p50 difference, mcp-go client |")
	p("|---|---:|---:|---:|---:|---:|---:|---|---:|")
	for _, f := range r.files {
		without, with := percentile(f.without, 50), percentile(f.with, 50)
		diff := with - without
		p("| %s | %s | %s | %+.1f ms | %s → %s | %s → %s | ≤ +%s | %s | %+.1f ms |", f.language, fmtMS(without), fmtMS(with), diff,
			fmtMS(percentile(f.serverWithout, 50)), fmtMS(percentile(f.serverWith, 50)),
			fmtMS(ms(f.cpuWithout.self+f.cpuWithout.children)), fmtMS(ms(f.cpuWith.self+f.cpuWith.children)),
			fmtMS(targetFilesOverheadMS), verdict(diff <= targetFilesOverheadMS),
			percentile(f.mcpGoWith, 50)-percentile(f.mcpGoWithout, 50))
	}
	p("")
}

func fmtBytes(n int) string { return fmt.Sprintf("%d MiB", n>>20) }
