package fiber_test

import (
	"fmt"
	"sync/atomic"

	"github.com/fibermpi/fibermpi/fiber"
)

// A scheduler runs fibers; Wait joins them.
func Example() {
	s, err := fiber.New(fiber.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	var sum atomic.Int64
	for i := 1; i <= 100; i++ {
		s.Spawn(func(*fiber.Fiber) { sum.Add(int64(i)) })
	}
	if err := s.Wait(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(sum.Load(), s.Close())
	// Output: 5050 <nil>
}

// An Event hands control from one fiber to another: Wait yields the fiber
// until Signal fires the event, whichever comes first.
func ExampleEvent() {
	s, _ := fiber.New(fiber.Config{Workers: 1})
	defer s.Close()
	var ready fiber.Event
	var msg string
	s.Spawn(func(f *fiber.Fiber) {
		f.Wait(&ready) // yields until the producer signals
		fmt.Println("consumer got:", msg)
	})
	s.Spawn(func(f *fiber.Fiber) {
		msg = "hello"
		ready.Signal()
	})
	s.Wait()
	// Output: consumer got: hello
}

// A plain goroutine waits on the same Event with a goroutine waiter: it
// parks instead of yielding.
func ExampleNewGoroutineWaiter() {
	s, _ := fiber.New(fiber.Config{Workers: 1})
	defer s.Close()
	var done fiber.Event
	s.Spawn(func(*fiber.Fiber) { done.Signal() })
	done.Wait(fiber.NewGoroutineWaiter())
	fmt.Println("fiber finished")
	// Output: fiber finished
}
