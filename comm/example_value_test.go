package comm_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/comm"
)

// Job is not a fixed-size type (a string, a slice, a map): it travels by
// SendValue, encoded with gob.
type Job struct {
	Name   string
	Inputs []string
	Env    map[string]string
}

// SendValue sends any Go value; RecvValue needs no size in advance.
func ExampleSendValue() {
	run(2, func(c *comm.Comm[byte]) error {
		if c.Rank() == 0 {
			return comm.SendValue(c, Job{Name: "render", Inputs: []string{"a.png", "b.png"}, Env: map[string]string{"Q": "high"}}, 1, 0)
		}
		var j Job
		st, err := comm.RecvValue(c, &j, 0, 0)
		fmt.Printf("%s %v %v (from rank %d)\n", j.Name, j.Inputs, j.Env, st.Source)
		return err
	})
	// Output: render [a.png b.png] map[Q:high] (from rank 0)
}

// IsendValue encodes at once and returns a request; IrecvValue's request
// receives the value when a Test or Wait finds it.
func ExampleIrecvValue() {
	each(2, func(c *comm.Comm[byte]) (string, error) {
		other := 1 - c.Rank()
		sq, err := comm.IsendValue(c, fmt.Sprintf("greetings from %d", c.Rank()), other, 0)
		if err != nil {
			return "", err
		}
		var s string
		rq, err := comm.IrecvValue(c, &s, other, 0)
		if err != nil {
			return "", err
		}
		if _, err := rq.Wait(); err != nil {
			return "", err
		}
		_, err = sq.Wait()
		return fmt.Sprintf("rank %d: %s", c.Rank(), s), err
	})
	// Output:
	// rank 0: greetings from 1
	// rank 1: greetings from 0
}

// BcastValue gives every rank the root's value: here a configuration map.
func ExampleBcastValue() {
	each(3, func(c *comm.Comm[byte]) (string, error) {
		var cfg map[string]int
		if c.Rank() == 0 {
			cfg = map[string]int{"iters": 100, "n": 512}
		}
		err := comm.BcastValue(c, &cfg, 0)
		return fmt.Sprintf("rank %d: %v", c.Rank(), cfg), err
	})
	// Output:
	// rank 0: map[iters:100 n:512]
	// rank 1: map[iters:100 n:512]
	// rank 2: map[iters:100 n:512]
}

// GatherValue collects values of any size at the root, in rank order.
func ExampleGatherValue() {
	run(3, func(c *comm.Comm[byte]) error {
		words := []string{"zero", "one", "two"}[c.Rank()]
		all, err := comm.GatherValue(c, words, 0)
		if err == nil && c.Rank() == 0 {
			fmt.Println(all)
		}
		return err
	})
	// Output: [zero one two]
}
