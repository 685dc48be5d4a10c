package osu

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// ErrFormat is wrapped by Parse's errors.
var ErrFormat = errors.New("osu: not an OSU table")

// Table is one OSU-format table read back: ours, the C programs' of
// bench/osu-c, or OMB's own.
type Table struct {
	// Title is the first comment line without its "# " (OMB puts the
	// benchmark's name and version there).
	Title string
	// Notes are the other comment lines before the column names, without
	// their "# " ("[ pairs: 1 ] [ window size: 64 ]", ...).
	Notes []string
	// HasSize says whether the first column is the message size (barrier's
	// table has none).
	HasSize bool
	// Columns names the value columns, in order ("Latency (us)", "MB/s",
	// ...), without Size.
	Columns []string
	// Rows are the data lines in order.
	Rows []Row
}

// Row is one data line: its size (zero when the table has none) and one
// value per column.
type Row struct {
	Size   int
	Values []float64
}

// columnSep separates column names: OMB right-aligns them in wide fields,
// so two or more spaces stand between names, and one inside a name.
var columnSep = regexp.MustCompile(` {2,}`)

// Parse reads one table in OSU's format: comment lines starting with "#",
// the last of which names the columns, then one line per size. Empty lines
// are skipped. It checks that every row has one number per column and that
// sizes are non-negative integers; it does not judge the numbers.
func Parse(r io.Reader) (*Table, error) {
	sc := bufio.NewScanner(r)
	var comments []string
	t := &Table{}
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), " \t\r")
		if strings.TrimSpace(s) == "" {
			continue
		}
		if strings.HasPrefix(s, "#") {
			if len(t.Rows) > 0 {
				return nil, fmt.Errorf("%w: line %d: comment after the data (a second table?): %q", ErrFormat, line, s)
			}
			comments = append(comments, strings.TrimSpace(strings.TrimPrefix(s, "#")))
			continue
		}
		if t.Columns == nil {
			if err := t.setHeader(comments); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
		}
		row, err := t.parseRow(s)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
		}
		t.Rows = append(t.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("%w: no data rows", ErrFormat)
	}
	return t, nil
}

// setHeader takes the title, notes and column names from the comment lines
// before the first row.
func (t *Table) setHeader(comments []string) error {
	if len(comments) < 2 {
		return fmt.Errorf("%w: want a title and a column line before the data, have %d comment lines", ErrFormat, len(comments))
	}
	t.Title = comments[0]
	t.Notes = comments[1 : len(comments)-1]
	cols := columnSep.Split(comments[len(comments)-1], -1)
	if cols[0] == "Size" {
		t.HasSize = true
		cols = cols[1:]
	}
	if len(cols) == 0 {
		return fmt.Errorf("%w: no value columns in %q", ErrFormat, comments[len(comments)-1])
	}
	t.Columns = cols
	return nil
}

func (t *Table) parseRow(s string) (Row, error) {
	f := strings.Fields(s)
	want := len(t.Columns)
	if t.HasSize {
		want++
	}
	if len(f) != want {
		return Row{}, fmt.Errorf("%d fields, want %d: %q", len(f), want, s)
	}
	var r Row
	if t.HasSize {
		n, err := strconv.Atoi(f[0])
		if err != nil || n < 0 {
			return Row{}, fmt.Errorf("size %q is not a non-negative integer", f[0])
		}
		r.Size = n
		f = f[1:]
	}
	r.Values = make([]float64, len(f))
	for i, x := range f {
		v, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return Row{}, fmt.Errorf("value %q of column %q is not a number", x, t.Columns[i])
		}
		r.Values[i] = v
	}
	return r, nil
}

// Column returns the index of the value column named name, or -1.
func (t *Table) Column(name string) int {
	for i, c := range t.Columns {
		if c == name {
			return i
		}
	}
	return -1
}
