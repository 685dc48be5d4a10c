// Command fibermpi-demo runs a ring of fibers on the fiber scheduler, the
// embedded default: every fiber waits for a token from its left neighbour and
// passes it to its right one, for a number of laps, and the program reports
// the handoff rate.
//
//	go run ./cmd/fibermpi-demo -fibers 100000 -laps 10
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fibermpi/fibermpi"
	"github.com/fibermpi/fibermpi/fiber"
)

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs the command with args and returns its exit status: 0 on success,
// 1 if the ring fails, 2 for bad flags.
func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fibermpi-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fibers := fs.Int("fibers", 10_000, "fibers in the ring")
	laps := fs.Int("laps", 20, "times the token goes round")
	workers := fs.Int("workers", 0, "workers (0: GOMAXPROCS-1, at least 1)")
	version := fs.Bool("version", false, "print the version of fibermpi and of the build, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version {
		if fibermpi.PrintVersion(stdout, "fibermpi-demo") != nil {
			return 1
		}
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fibermpi-demo: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := run(stdout, *fibers, *laps, *workers); err != nil {
		fmt.Fprintln(stderr, "fibermpi-demo:", err)
		return 1
	}
	return 0
}

func run(w io.Writer, n, laps, workers int) error {
	if n < 2 || laps < 1 {
		return fmt.Errorf("need at least 2 fibers and 1 lap, got %d and %d", n, laps)
	}
	s, err := fiber.New(fiber.Config{Workers: workers})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, s.Config())
	// inbox[i] fires when fiber i holds the token; tokens[i] is the lap.
	inbox := make([]fiber.Event, n)
	tokens := make([]int, n)
	start := time.Now()
	for i := range n {
		err := s.Spawn(func(f *fiber.Fiber) {
			next := (i + 1) % n
			for {
				f.Wait(&inbox[i])
				inbox[i].Reset()
				lap := tokens[i]
				if i == n-1 {
					lap++
				}
				if lap == laps {
					if i == n-1 {
						// Last lap done: tell everyone else to stop.
						for j := range n - 1 {
							tokens[j] = laps
							inbox[j].Signal()
						}
					}
					return
				}
				tokens[next] = lap
				inbox[next].Signal()
			}
		})
		if err != nil {
			return err
		}
	}
	inbox[0].Signal()
	if err := s.Wait(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := s.Close(); err != nil {
		return err
	}
	hops := n * laps
	fmt.Fprintf(w, "%d fibers, %d laps: %d handoffs in %v (%.0f ns per handoff)\n",
		n, laps, hops, elapsed.Round(time.Millisecond), float64(elapsed.Nanoseconds())/float64(hops))
	return nil
}
