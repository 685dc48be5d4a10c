// Command startup is the trivial job of fmpirun's start-up benchmark: it
// joins, fences once and leaves.
package main

import (
	"fmt"
	"os"

	"github.com/fibermpi/fibermpi/bootstrap"
)

func main() {
	b, err := bootstrap.Detect()
	if err == nil {
		err = b.Fence()
	}
	if err == nil {
		err = b.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
