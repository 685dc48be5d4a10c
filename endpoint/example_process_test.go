package endpoint_test

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

// Init starts this process's part of the job; Finalize ends it. Without a
// launcher the job is this process alone, on the in-process transport.
func ExampleInit() {
	p, err := endpoint.Init(endpoint.ThreadFunneled, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.ThreadLevel(), p.Procs(), p.Rank(), p.Transport().Name())
	fmt.Println(p.Finalize())
	// Output:
	// THREAD_FUNNELED 1 0 inproc
	// <nil>
}

// Finalize ends the process's part of the job: calls after it fail with
// ErrFinalized.
func ExampleProcess_Finalize() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, err := p.CreateEndpoints(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Finalize())
	_, err = p.CreateEndpoints(1)
	fmt.Println(errors.Is(err, endpoint.ErrFinalized), errors.Is(p.Halted(), endpoint.ErrFinalized), len(eps))
	// Output:
	// <nil>
	// true true 1
}

// Options.Validate reports options that cannot work, wrapping ErrOptions;
// the zero Options is valid.
func ExampleOptions_Validate() {
	fmt.Println(endpoint.Options{}.Validate())
	err := endpoint.Options{EagerLimit: 1 << 20, PayloadSize: 4096}.Validate()
	fmt.Println(errors.Is(err, endpoint.ErrOptions), err)
	// Output:
	// <nil>
	// true endpoint: bad options: EagerLimit 1048576 exceeds PayloadSize 4096
}

// Process.Options returns the options the process runs with, as given
// (zero fields mean their defaults).
func ExampleProcess_Options() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{EagerLimit: 512})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Options().EagerLimit, p.Finalize())
	// Output: 512 <nil>
}

// MaxEndpoints bounds what CreateEndpoints may make (Options.MaxEndpoints).
func ExampleProcess_MaxEndpoints() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{MaxEndpoints: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = p.CreateEndpoints(4)
	fmt.Println(p.MaxEndpoints(), err != nil, p.Finalize())
	// Output: 3 true <nil>
}

// Procs and Rank place this process in the job; under fmpirun -n 4 they
// would be 4 and 0..3.
func ExampleProcess_Procs() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Procs(), p.Rank(), p.Finalize())
	// Output: 1 0 <nil>
}

// World is Init's own endpoint: rank Rank() of a world of one endpoint per
// process. Register it to use it.
func ExampleProcess_World() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	w := p.World()
	fmt.Println(w.Rank(), w.Size(), p.Finalize())
	// Output: 0 1 <nil>
}

// Scheduler is the process's fiber scheduler: spawn rank fibers on it
// (Run does this for you).
func ExampleProcess_Scheduler() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	var ran atomic.Int32
	s := p.Scheduler()
	for range 3 {
		if err := s.Spawn(func(f *fiber.Fiber) { ran.Add(1) }); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(s.Wait(), ran.Load(), s.Workers(), p.Finalize())
	// Output: <nil> 3 1 <nil>
}

// Halted is nil while calls may proceed, and the error they return once
// the job has ended.
func ExampleProcess_Halted() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Halted())
	p.Abort(errors.New("supervisor gave up"))
	fmt.Println(errors.Is(p.Halted(), endpoint.ErrAborted))
	p.Finalize()
	// Output:
	// <nil>
	// true
}

// Process.Abort ends the job from outside the ranks (a supervisor, a lost
// peer): every blocked call returns an *AbortError wrapping the cause.
func ExampleProcess_Abort() {
	cause := errors.New("lost node 3")
	err := endpoint.Run(2, func(ep *endpoint.Endpoint) error {
		if ep.Rank() == 0 {
			ep.Proc().Abort(cause)
			return nil
		}
		_, err := ep.Recv(ep.World(), 0, 0, nil)
		fmt.Println("rank 1:", errors.Is(err, cause), errors.Is(err, endpoint.ErrAborted))
		return err
	})
	fmt.Println(errors.Is(err, cause))
	// Output:
	// rank 1: true true
	// true
}

// AtHalt runs a function when the process wakes its blocked callers at the
// end of the job: a layer that sleeps outside requests uses it.
func ExampleProcess_AtHalt() {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var woke atomic.Bool
	p.AtHalt(func() { woke.Store(true) })
	fmt.Println(woke.Load())
	p.Abort(errors.New("stop")) // the job ends: the process wakes its sleepers
	fmt.Println(woke.Load())
	p.Finalize()
	// Output:
	// false
	// true
}

// Owner says which process of the job holds an endpoint address (-1 for
// one never allocated).
func ExampleProcess_Owner() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		return fmt.Sprint(ep.Proc().Owner(ep.Addr())), nil
	})
	// Output: 0
}

// Deadlocked reports whether every caller here is blocked: ok false while
// some rank can run.
func ExampleProcess_Deadlocked() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		_, ok := ep.Proc().Deadlocked() // the caller itself is running
		return fmt.Sprint("deadlocked: ", ok), nil
	})
	// Output: deadlocked: false
}

// Trace is nil unless Options.Trace (or FIBERMPI_TRACE) names a file.
func ExampleProcess_Trace() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		return fmt.Sprint(ep.Proc().Trace() == nil, ep.Tracer() == nil), nil
	})
	// Output: true true
}

// ThreadLevel is the level Init granted.
func ExampleProcess_ThreadLevel() {
	err := endpoint.RunWith(endpoint.ThreadSerialized, endpoint.Options{}, 1, func(ep *endpoint.Endpoint) error {
		fmt.Println(ep.Proc().ThreadLevel())
		return nil
	})
	fmt.Println(err)
	// Output:
	// THREAD_SERIALIZED
	// <nil>
}
