package osu

import (
	"fmt"
	"io"
)

// OMB's column layout: the size left-aligned in 10 characters, each value
// right-aligned in 20 with 2 decimals; the collectives' iteration count in
// 12; a size-less latency (barrier) in 17.
const (
	sizeWidth      = 10
	fieldWidth     = 20
	precision      = 2
	iterWidth      = 12
	noSizeWidth    = 17
	sizeColumn     = "# Size"
	latencyColumn  = "Latency (us)"
	bwColumn       = "Bandwidth (MB/s)"
	avgLatColumn   = "Avg Latency(us)"
	minLatColumn   = "Min Latency(us)"
	maxLatColumn   = "Max Latency(us)"
	iterColumn     = "Iterations"
	mbwColumn      = "MB/s"
	msgRateColumn  = "Messages/s"
	noSizeAvgLabel = "# Avg Latency(us)"
)

// Title returns the name OMB gives the benchmark on its first line,
// without the leading "# ".
func (b Bench) Title() string {
	switch b {
	case Latency:
		return "OSU MPI Latency Test"
	case BW:
		return "OSU MPI Bandwidth Test"
	case BiBW:
		return "OSU MPI Bi-Directional Bandwidth Test"
	case MbwMr:
		return "OSU MPI Multiple Bandwidth / Message Rate Test"
	case LatencyMT:
		return "OSU MPI Multi-threaded Latency Test"
	case Allreduce:
		return "OSU MPI Allreduce Latency Test"
	case Bcast:
		return "OSU MPI Broadcast Latency Test"
	case Reduce:
		return "OSU MPI Reduce Latency Test"
	case Barrier:
		return "OSU MPI Barrier Latency Test"
	}
	return "OSU MPI " + string(b)
}

// A printer writes one benchmark's table in OMB's format. It keeps the
// first write error and then writes nothing more.
type printer struct {
	w     io.Writer
	bench Bench
	full  bool
	err   error
}

func (p *printer) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

// header writes the lines before the table: the title (followed by note,
// where OMB has its version), the benchmark's own lines, and the column
// names.
func (p *printer) header(note string, pairs, window, threads int) {
	title := "# " + p.bench.Title()
	if note != "" {
		title += " " + note
	}
	if p.bench.class() == classColl {
		p.printf("\n%s\n", title) // OMB's collectives start with an empty line
	} else {
		p.printf("%s\n", title)
	}
	switch p.bench {
	case Latency:
		p.printf("%-*s%*s\n", sizeWidth, sizeColumn, fieldWidth, latencyColumn)
	case BW, BiBW:
		p.printf("%-*s%*s\n", sizeWidth, sizeColumn, fieldWidth, bwColumn)
	case MbwMr:
		p.printf("# [ pairs: %d ] [ window size: %d ]\n", pairs, window)
		p.printf("%-*s%*s%*s\n", sizeWidth, sizeColumn, fieldWidth, mbwColumn, fieldWidth, msgRateColumn)
	case LatencyMT:
		p.printf("# Number of Sender threads: %d\n# Number of Receiver threads: %d\n", threads, threads)
		p.printf("%-*s%*s\n", sizeWidth, sizeColumn, fieldWidth, latencyColumn)
	case Allreduce, Bcast, Reduce, Barrier:
		if p.bench == Barrier {
			p.printf("%s", noSizeAvgLabel)
		} else {
			p.printf("%-*s%*s", sizeWidth, sizeColumn, fieldWidth, avgLatColumn)
		}
		if p.full {
			p.printf("%*s%*s%*s", fieldWidth, minLatColumn, fieldWidth, maxLatColumn, iterWidth, iterColumn)
		}
		p.printf("\n")
	}
}

// row writes one line of the point-to-point benchmarks: the size and its
// values.
func (p *printer) row(size int, vals ...float64) {
	p.printf("%-*d", sizeWidth, size)
	for _, v := range vals {
		p.printf("%*.*f", fieldWidth, precision, v)
	}
	p.printf("\n")
}

// collRow writes one line of a collective: size (none for barrier), the
// average latency, and with full the minimum, maximum and iterations.
func (p *printer) collRow(size int, avg, lo, hi float64, iterations int) {
	if p.bench == Barrier {
		p.printf("%*.*f", noSizeWidth, precision, avg)
	} else {
		p.printf("%-*d%*.*f", sizeWidth, size, fieldWidth, precision, avg)
	}
	if p.full {
		p.printf("%*.*f%*.*f%*d", fieldWidth, precision, lo, fieldWidth, precision, hi, iterWidth, iterations)
	}
	p.printf("\n")
}

// error returns the first write error; a nil printer (a caller that does
// not print) has none.
func (p *printer) error() error {
	if p == nil {
		return nil
	}
	return p.err
}
