package fiber_test

import (
	"fmt"
	"time"

	"github.com/fibermpi/fibermpi/fiber"
)

// A WaitGroup joins fibers, and any number of fibers and goroutines may
// wait on it at once; a fiber's Wait yields to its worker.
func ExampleWaitGroup_Wait() {
	s, _ := fiber.New(fiber.Config{Workers: 1})
	defer s.Close()
	var work fiber.WaitGroup
	results := make([]int, 4)
	for i := range results {
		work.Go(s, func(f *fiber.Fiber) {
			fiber.Sleep(f.Waiter(), time.Millisecond) // yields
			results[i] = i * i
		})
	}
	work.Wait(fiber.NewGoroutineWaiter())
	fmt.Println(results)
	// Output: [0 1 4 9]
}

// A Mutex may be held across a yield: the fibers waiting for it yield too,
// so the worker runs the holder to its Unlock.
func ExampleMutex_Lock() {
	s, _ := fiber.New(fiber.Config{Workers: 1})
	defer s.Close()
	var mu fiber.Mutex
	var wg fiber.WaitGroup
	balance := 0
	for range 10 {
		wg.Go(s, func(f *fiber.Fiber) {
			mu.Lock(f.Waiter())
			b := balance
			f.Yield() // another fiber runs here, but cannot enter
			balance = b + 10
			mu.Unlock()
		})
	}
	wg.Wait(fiber.NewGoroutineWaiter())
	fmt.Println(balance)
	// Output: 100
}
