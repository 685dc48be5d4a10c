package launch

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// outputs forwards the processes' standard output and error. A destination
// that is a file, without -prefix, is handed to the processes as is (no
// copy); otherwise each process writes into a pipe that a pump goroutine
// copies, one whole line at a time, so lines of different ranks never mix.
type outputs struct {
	prefix bool
	dst    [2]*lockedWriter // stdout, stderr
	direct [2]*os.File      // set when the destination is handed over as is
	child  [][2]*os.File    // per rank: the pipes' write ends, closed here once started
	reads  []*os.File       // the pipes' read ends
	pumps  sync.WaitGroup
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func newOutputs(cfg *Config) *outputs {
	o := &outputs{prefix: cfg.Prefix, child: make([][2]*os.File, cfg.N)}
	for i, w := range [2]io.Writer{cfg.Stdout, cfg.Stderr} {
		if f, ok := w.(*os.File); ok && !cfg.Prefix {
			o.direct[i] = f
		}
		o.dst[i] = &lockedWriter{w: w}
	}
	if cfg.Stdout == cfg.Stderr {
		o.dst[1] = o.dst[0]
	}
	return o
}

// files returns rank's standard output and error.
func (o *outputs) files(rank int) (stdout, stderr *os.File, err error) {
	var f [2]*os.File
	for i := range f {
		if o.direct[i] != nil {
			f[i] = o.direct[i]
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		o.reads = append(o.reads, r)
		o.child[rank][i], f[i] = w, w
		prefix := ""
		if o.prefix {
			prefix = "[" + strconv.Itoa(rank) + "] "
		}
		o.pumps.Add(1)
		go o.pump(r, o.dst[i], prefix)
	}
	return f[0], f[1], nil
}

// started closes this side's copies of rank's write ends, so the pumps see
// the end of the output when the process (and what it started) is gone.
func (o *outputs) started(rank int) {
	for i, w := range o.child[rank] {
		if w != nil {
			w.Close()
			o.child[rank][i] = nil
		}
	}
}

// finish waits up to d for the pumps to reach the end of every output, then
// closes the pipes (a process's children may hold them open) and waits for
// the pumps to stop.
func (o *outputs) finish(d time.Duration) {
	done := make(chan struct{})
	go func() { o.pumps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
	for _, r := range o.reads {
		r.Close()
	}
	<-done
}

// maxLine bounds what a pump holds of one line: a longer line is written
// in pieces of about this size, and only then may another rank's lines
// come between them.
const maxLine = 1 << 20

// pump copies r to w line by line, each line prefixed and written whole (up
// to maxLine); a last line without a newline gets one.
func (o *outputs) pump(r *os.File, w io.Writer, prefix string) {
	defer o.pumps.Done()
	br := bufio.NewReaderSize(r, 32<<10)
	var buf []byte
	atStart := true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atStart {
				buf = append(buf, prefix...)
			}
			buf = append(buf, chunk...)
			atStart = chunk[len(chunk)-1] == '\n'
		}
		partial := errors.Is(err, bufio.ErrBufferFull)
		if !atStart && err != nil && !partial {
			buf = append(buf, '\n')
		}
		if len(buf) > 0 && (!partial || len(buf) >= maxLine) {
			w.Write(buf)
			buf = buf[:0]
		}
		if err != nil && !partial {
			return
		}
	}
}
