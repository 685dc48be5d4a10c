// Hello is the smallest fibermpi program that runs as several processes:
// every rank of the world passes a token round a ring and rank 0 prints
// what came back. Run it in one process (a world of one rank) with
//
//	go run ./examples/hello
//
// or as N processes on this node with the launcher:
//
//	go build -o /tmp/hello ./examples/hello && go run ./cmd/fmpirun -n 4 /tmp/hello
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fibermpi/fibermpi"
	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
)

func main() {
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fibermpi.PrintVersion(os.Stdout, "hello")
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

// run joins the job (fmpirun's processes, or this process alone), and runs
// the ring on this process's world endpoint from a goroutine.
func run() (err error) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if ferr := p.Finalize(); err == nil {
			err = ferr
		}
	}()
	ep, err := p.World().Register(fiber.NewGoroutineWaiter())
	if err != nil {
		return err
	}
	defer ep.Unregister()
	c, err := comm.World[int](ep)
	if err != nil {
		return err
	}
	me, n := c.Rank(), c.Size()
	token := []int{0}
	if me != 0 {
		if _, err := c.Recv(token, me-1, 0); err != nil {
			return err
		}
	}
	token[0] += me
	if n > 1 {
		if err := c.Send(token, (me+1)%n, 0); err != nil {
			return err
		}
		if me == 0 {
			if _, err := c.Recv(token, n-1, 0); err != nil {
				return err
			}
		}
	}
	if me == 0 {
		fmt.Printf("hello from %d processes (%s): the token came back as %d\n", n, p.Transport().Name(), token[0])
	}
	return nil
}
