// Command fmpi-trace turns a fibermpi trace into pictures and numbers: the
// communication matrix (who sent how many bytes and messages to whom) as an
// SVG and a PNG heat map with a legend, a timeline (PREFIX.timeline.svg and
// .png: a row per endpoint, its calls as bars, messages as lines), a
// per-endpoint summary of where the
// time went (computing, in point-to-point calls, in collectives; mpiP
// style), the wait-for graph of a deadlock report when the job ended in one
// (PREFIX.waitfor.svg and .png), and, for the parts of a job of several processes, one merged
// trace that opens in Perfetto (ui.perfetto.dev) or chrome://tracing as a
// timeline with one track per endpoint and an arrow per message.
//
// Record a trace with FIBERMPI_TRACE=path (or endpoint.Options.Trace; the
// red-black example's -trace flag): a job of one process writes path, a
// job of several writes path.0, path.1, … which fmpi-trace merges:
//
//	go run ./examples/redblack -variant hybrid -trace t.json
//	go run ./cmd/fmpi-trace t.json        # t.matrix.*, t.timeline.*, summary
//	FIBERMPI_TRACE=job.json fmpirun -n 4 ./prog
//	fmpi-trace job.json                   # merges job.json.0..3 into job.json
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fibermpi/fibermpi"
	"github.com/fibermpi/fibermpi/trace"
)

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs the command and returns its exit status: 0 on success, 1 when
// a file cannot be read or written, 2 for bad usage.
func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fmpi-trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "prefix of the files written (default: the trace's path without .json)")
	width := fs.Int("width", 1400, "width of the matrix picture in pixels")
	height := fs.Int("height", 600, "height of the matrix picture in pixels")
	merged := fs.String("merged", "", "where to write the merged trace of a job's parts (default: the path the job traced to)")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: fmpi-trace [flags] trace.json [part ...]\n\n"+
			"Draws a fibermpi trace's communication matrix (PREFIX.matrix.svg and .png) and\n"+
			"timeline (PREFIX.timeline.svg and .png), and\n"+
			"prints where each endpoint's time went. Given the path a job of several\n"+
			"processes traced to (whose parts are path.0, path.1, …) or the parts\n"+
			"themselves, it first merges them into one trace.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version {
		if fibermpi.PrintVersion(stdout, "fmpi-trace") != nil {
			return 1
		}
		return 0
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	if *width < 200 || *height < 150 {
		fmt.Fprintf(stderr, "fmpi-trace: picture %dx%d too small (at least 200x150)\n", *width, *height)
		return 2
	}
	paths, base, err := expand(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "fmpi-trace: %v\n", err)
		return 1
	}
	var parts []*trace.Data
	for _, p := range paths {
		d, err := trace.ReadFile(p)
		if err != nil {
			fmt.Fprintf(stderr, "fmpi-trace: %v\n", err)
			return 1
		}
		parts = append(parts, d)
	}
	d, err := trace.Merge(parts...)
	if err != nil {
		fmt.Fprintf(stderr, "fmpi-trace: %v\n", err)
		return 1
	}
	if miss := d.Missing(); len(miss) > 0 {
		fmt.Fprintf(stderr, "fmpi-trace: warning: no part from processes %v of %d; their sends and receives are missing\n", miss, d.Procs)
	}
	prefix := *out
	if prefix == "" {
		prefix = strings.TrimSuffix(base, ".json")
	}
	if len(paths) > 1 {
		to := *merged
		if to == "" {
			to = base
		}
		if err := d.WriteFile(to); err != nil {
			fmt.Fprintf(stderr, "fmpi-trace: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "merged %d parts into %s\n", len(paths), to)
	}
	m := d.Matrix()
	for _, f := range []struct {
		ext  string
		draw func(io.Writer) error
	}{
		{".matrix.svg", func(w io.Writer) error { return writeMatrixSVG(w, m, *width, *height) }},
		{".matrix.png", func(w io.Writer) error { return writeMatrixPNG(w, m, *width, *height) }},
		{".timeline.svg", func(w io.Writer) error { return writeTimelineSVG(w, d, *width, *height) }},
		{".timeline.png", func(w io.Writer) error { return writeTimelinePNG(w, d, *width, *height) }},
	} {
		if err := writeFile(prefix+f.ext, f.draw); err != nil {
			fmt.Fprintf(stderr, "fmpi-trace: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s\n", prefix+f.ext)
	}
	if dl := d.Deadlock; dl != nil {
		side := min(*width, *height*3/2)
		for _, f := range []struct {
			ext  string
			draw func(io.Writer) error
		}{
			{".waitfor.svg", func(w io.Writer) error { return writeWaitForSVG(w, dl, side, *height) }},
			{".waitfor.png", func(w io.Writer) error { return writeWaitForPNG(w, dl, side, *height) }},
		} {
			if err := writeFile(prefix+f.ext, f.draw); err != nil {
				fmt.Fprintf(stderr, "fmpi-trace: %v\n", err)
				return 1
			}
			fmt.Fprintf(stdout, "wrote %s\n", prefix+f.ext)
		}
	}
	fmt.Fprintf(stdout, "\ncommunication matrix (bytes/messages, by endpoint):\n")
	writeMatrixText(stdout, m)
	fmt.Fprintf(stdout, "\ntime per endpoint:\n")
	if err := trace.WriteSummary(stdout, d.Summary()); err != nil {
		return 1
	}
	if dl := d.Deadlock; dl != nil {
		fmt.Fprintf(stdout, "\nthe job deadlocked; wait-for cycle %v\n%s\n", dl.Cycle, dl.Report)
	}
	return 0
}

// expand turns the arguments into trace files: a path that does not exist
// but whose parts (path.0, path.1, …) do stands for them. It returns the
// files and the base path outputs are named after.
func expand(args []string) (paths []string, base string, err error) {
	base = args[0]
	for _, a := range args {
		if _, err := os.Stat(a); err == nil {
			paths = append(paths, a)
			continue
		}
		var found []string
		for i := 0; ; i++ {
			p := trace.PartPath(a, i)
			if _, err := os.Stat(p); err != nil {
				break
			}
			found = append(found, p)
		}
		if len(found) == 0 {
			return nil, "", fmt.Errorf("%s: no such trace, and no parts %s", a, filepath.Base(trace.PartPath(a, 0)))
		}
		paths = append(paths, found...)
	}
	return paths, base, nil
}

func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
