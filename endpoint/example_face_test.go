package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fibermpi/fibermpi/endpoint"
)

// RunGoroutines runs each rank on a plain goroutine, already registered
// with its endpoint: a rank may share memory with a mutex and use
// time.Sleep, which a fiber rank must not.
func ExampleRunGoroutines() {
	var mu sync.Mutex
	seen := map[int]bool{}
	err := endpoint.RunGoroutines(3, func(ep *endpoint.Endpoint) error {
		time.Sleep(time.Millisecond)
		mu.Lock()
		seen[ep.Rank()] = true
		mu.Unlock()
		return nil
	})
	fmt.Println(len(seen), "ranks ran;", err)
	// Output: 3 ranks ran; <nil>
}

// RunContext ends the job when its context does: every blocked call
// returns an error wrapping the context's.
func ExampleRunContext() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := endpoint.RunContext(ctx, endpoint.ThreadSingle, endpoint.Options{}, 2, func(ep *endpoint.Endpoint) error {
		_, err := ep.Recv(ep.World(), endpoint.AnySource, 0, nil) // nobody sends
		return err
	})
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output: true
}
