package trace_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/trace"
)

// Trace a token ring of three ranks and print its communication matrix:
// Options.Trace (or FIBERMPI_TRACE) names the file Finalize writes.
func Example() {
	dir, err := os.MkdirTemp("", "trace")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ring.json")
	opts := endpoint.Options{Trace: path}
	err = endpoint.RunWith(endpoint.ThreadSingle, opts, 3, func(ep *endpoint.Endpoint) error {
		w, me, n := ep.World(), ep.Rank(), ep.Size()
		token := make([]byte, 8)
		if me != 0 {
			if _, err := ep.Recv(w, me-1, 0, token); err != nil {
				return err
			}
		}
		if err := ep.Send(w, me, (me+1)%n, 0, token); err != nil {
			return err
		}
		if me == 0 {
			_, err := ep.Recv(w, n-1, 0, token)
			return err
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	d, err := trace.ReadFile(path)
	if err != nil {
		panic(err)
	}
	m := d.Matrix()
	for i, from := range m.Addrs {
		for j, to := range m.Addrs {
			if m.Msgs[i][j] > 0 {
				fmt.Printf("endpoint %d → %d: %d message, %d bytes\n", from, to, m.Msgs[i][j], m.Bytes[i][j])
			}
		}
	}
	fmt.Println("message arrows:", len(d.Flows()))
	// Output:
	// endpoint 1 → 2: 1 message, 8 bytes
	// endpoint 2 → 3: 1 message, 8 bytes
	// endpoint 3 → 1: 1 message, 8 bytes
	// message arrows: 3
}
