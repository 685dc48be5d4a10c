// Package commtest runs SPMD code under go test: n ranks, each with its own
// *T whose Fatal, Errorf and Run behave inside a rank — a fiber or a
// goroutine — as *testing.T's do in a test.
//
// Inside a fiber, *testing.T's FailNow (and so Fatal) is not allowed: it
// calls runtime.Goexit, which ends the fiber's worker and every fiber on
// it. A rank's *T instead reports through the test's *testing.T (its
// Errorf is safe from any goroutine), then ends only its rank: the job then
// ends as when a rank returns an error (the other ranks' blocked calls
// return an error wrapping comm.ErrAborted), and the messages that only say
// so are not reported again.
//
//	func TestRing(t *testing.T) {
//		commtest.Run(t, 4, func(t *commtest.T, c *comm.Comm[int]) {
//			got := make([]int, 1)
//			if _, err := c.Sendrecv([]int{c.Rank()}, (c.Rank()+1)%c.Size(), 0, got, comm.AnySource, 0); err != nil {
//				t.Fatal(err)
//			}
//		})
//	}
package commtest

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
)

// T is one rank's view of the test. Its methods may be called only from
// the rank's own fiber or goroutine.
type T struct {
	t      *testing.T
	rank   int
	name   string // the rank's subtest path, "" at the top
	failed atomic.Bool
	parent *T
}

// errFailed is what a rank that called Fatal returns: the cause of the
// job's end, already reported.
var errFailed = errors.New("commtest: the rank failed the test")

// stop unwinds a rank (or a rank's subtest) from Fatal to its Run.
type stop struct{ t *T }

// Rank returns the rank.
func (t *T) Rank() int { return t.rank }

// Name returns the test's name, then the rank and its subtest path.
func (t *T) Name() string {
	n := fmt.Sprintf("%s/rank%d", t.t.Name(), t.rank)
	if t.name != "" {
		n += "/" + t.name
	}
	return n
}

// Helper marks the calling function as a test helper, as testing.T.Helper.
func (t *T) Helper() { t.t.Helper() }

// Failed reports whether the rank (or this subtest of it) has failed.
func (t *T) Failed() bool { return t.failed.Load() }

// Log reports args with the rank's prefix, as testing.T.Log.
func (t *T) Log(args ...any) {
	t.t.Helper()
	t.t.Log(t.prefix() + fmt.Sprint(args...))
}

// Logf is Log with a format.
func (t *T) Logf(format string, args ...any) {
	t.t.Helper()
	t.t.Log(t.prefix() + fmt.Sprintf(format, args...))
}

// Error reports args and marks the rank and the test failed; the rank goes
// on. A message about the job's end caused by another rank's failure is
// left out (that rank reported the cause).
func (t *T) Error(args ...any) {
	t.t.Helper()
	t.fail(fmt.Sprint(args...), args)
}

// Errorf is Error with a format.
func (t *T) Errorf(format string, args ...any) {
	t.t.Helper()
	t.fail(fmt.Sprintf(format, args...), args)
}

// Fatal is Error, then the end of the rank (or of the rank's subtest): the
// other ranks' blocked and later calls return an error wrapping
// comm.ErrAborted.
func (t *T) Fatal(args ...any) {
	t.t.Helper()
	t.fail(fmt.Sprint(args...), args)
	panic(stop{t})
}

// Fatalf is Fatal with a format.
func (t *T) Fatalf(format string, args ...any) {
	t.t.Helper()
	t.fail(fmt.Sprintf(format, args...), args)
	panic(stop{t})
}

// FailNow marks the rank failed and ends it, as Fatal without a message.
func (t *T) FailNow() {
	t.markFailed()
	t.t.Fail()
	panic(stop{t})
}

// Run runs f as a subtest of the rank, on the rank's own fiber or
// goroutine: a Fatal in f ends f only, and the rank goes on. It reports
// whether f succeeded. (It is not a testing subtest: go test's -run does
// not select it, and every rank must call the same subtests in the same
// order if they communicate.)
func (t *T) Run(name string, f func(t *T)) (ok bool) {
	sub := &T{t: t.t, rank: t.rank, name: name, parent: t}
	if t.name != "" {
		sub.name = t.name + "/" + name
	}
	defer func() {
		if r := recover(); r != nil {
			if s, isStop := r.(stop); !isStop || s.t != sub {
				panic(r)
			}
		}
		ok = !sub.Failed()
	}()
	f(sub)
	return true
}

func (t *T) prefix() string {
	p := fmt.Sprintf("rank %d: ", t.rank)
	if t.name != "" {
		p = fmt.Sprintf("rank %d: %s: ", t.rank, t.name)
	}
	return p
}

func (t *T) markFailed() {
	for x := t; x != nil; x = x.parent {
		x.failed.Store(true)
	}
}

// fail reports msg unless it is only about another rank's failure.
func (t *T) fail(msg string, args []any) {
	t.t.Helper()
	t.markFailed()
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, errFailed) {
			t.t.Fail()
			return
		}
	}
	t.t.Error(t.prefix() + strings.TrimSuffix(msg, "\n"))
}

// Run runs fn as n ranks of a world of E, each on a fiber (endpoint.Run),
// and reports every rank's failure on t. It returns when every rank has.
func Run[E any](t *testing.T, n int, fn func(t *T, c *comm.Comm[E])) {
	t.Helper()
	RunWith(t, Config{}, n, fn)
}

// RunGoroutines is Run with each rank on a plain goroutine
// (endpoint.RunGoroutines).
func RunGoroutines[E any](t *testing.T, n int, fn func(t *T, c *comm.Comm[E])) {
	t.Helper()
	RunWith(t, Config{Goroutines: true}, n, fn)
}

// Config says how RunWith runs the ranks. The zero value is Run's: fibers,
// endpoint.ThreadSingle, default options.
type Config struct {
	Goroutines bool                 // plain goroutines instead of fibers
	Level      endpoint.ThreadLevel // the endpoints' thread level
	Options    endpoint.Options     // the process's options
}

// RunWith is Run configured by cfg.
func RunWith[E any](t *testing.T, cfg Config, n int, fn func(t *T, c *comm.Comm[E])) {
	t.Helper()
	rank := func(ep *endpoint.Endpoint) (err error) {
		rt := &T{t: t, rank: ep.Rank()}
		c, err := comm.World[E](ep)
		if err != nil {
			rt.Errorf("comm.World: %v", err)
			return errFailed
		}
		defer func() {
			if r := recover(); r != nil {
				if _, isStop := r.(stop); !isStop {
					panic(r) // the job reports it as a *endpoint.PanicError
				}
				err = errFailed // Fatal: the job ends
			}
			// After Error alone the rank returns normally: the test has
			// failed, and the other ranks go on.
		}()
		fn(rt, c)
		return nil
	}
	run := endpoint.RunWith
	if cfg.Goroutines {
		run = endpoint.RunGoroutinesWith
	}
	if err := run(cfg.Level, cfg.Options, n, rank); err != nil {
		for _, e := range flatten(err) {
			if !errors.Is(e, errFailed) {
				t.Error(e)
			}
		}
	}
}

// flatten splits a joined error into its parts.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
