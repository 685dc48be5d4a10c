package match_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/match"
)

// message and request stand for the layer above's packet and receive
// request.
type message struct{ payload string }
type request struct{ name string }

// A message and its receive find each other whichever comes first.
func Example() {
	t, err := match.New[message, request](match.Config{Expected: 4096})
	if err != nil {
		panic(err)
	}
	k := match.MustKey(1, 3, 7) // context 1, source 3, tag 7

	// The receive is posted first: it waits in the table.
	_, _, ok, _ := t.Post(k, &request{name: "recv A"})
	fmt.Println("Post matched:", ok)
	// The message arrives and finds it.
	r, ok, _ := t.Arrive(k, &message{payload: "hello"})
	fmt.Println("Arrive matched:", ok, r.name)

	// The message arrives first: it waits as unexpected.
	t.Arrive(k, &message{payload: "world"})
	m, mk, ok, _ := t.Post(k, &request{name: "recv B"})
	fmt.Println("Post matched:", ok, m.payload, "from", mk)
	// Output:
	// Post matched: false
	// Arrive matched: true recv A
	// Post matched: true world from ctx=1 src=3 tag=7
}

// Wildcard receives match in MPI order: the earliest posted receive wins,
// and per source the earliest arrived message is taken first.
func ExampleTable_Post_wildcard() {
	t, _ := match.New[message, request](match.Config{})
	t.Arrive(match.MustKey(0, 2, 5), &message{payload: "first"})
	t.Arrive(match.MustKey(0, 2, 1), &message{payload: "second"})

	anyTag := match.MustKey(0, 2, match.AnyTag)
	m, mk, _, _ := t.Post(anyTag, &request{})
	fmt.Println(m.payload, mk)
	m, mk, _, _ = t.Post(anyTag, &request{})
	fmt.Println(m.payload, mk)

	// An AnySource receive posted before an exact one gets the message.
	t.Post(match.MustKey(0, match.AnySource, 9), &request{name: "wildcard"})
	t.Post(match.MustKey(0, 4, 9), &request{name: "exact"})
	r, _, _ := t.Arrive(match.MustKey(0, 4, 9), &message{})
	fmt.Println(r.name)
	// Output:
	// first ctx=0 src=2 tag=5
	// second ctx=0 src=2 tag=1
	// wildcard
}

// Dang et al.'s primitive: Insert stores into an empty slot or returns what is
// there; Empty claims it with one atomic instruction.
func ExampleTable_Insert() {
	t, _ := match.New[message, request](match.Config{NoAnySource: true, NoAnyTag: true})
	k := match.MustKey(0, 1, 1)

	// The communication server inserts an arrived packet.
	_, _, stored, _ := t.Insert(k, match.Item[message, request]{Msg: &message{payload: "data"}})
	fmt.Println("packet stored:", stored)

	// The receiving thread's insert fails and finds the packet.
	cur, slot, stored, _ := t.Insert(k, match.Item[message, request]{Recv: &request{}})
	if !stored && cur.Msg != nil && t.Empty(slot) {
		fmt.Println("received:", cur.Msg.payload)
	}
	// Output:
	// packet stored: true
	// received: data
}

func ExampleNewKey() {
	k, err := match.NewKey(3, match.AnySource, 42)
	fmt.Println(k, err, k.IsWildcard())
	_, err = match.NewKey(3, 1, match.MaxTag+1)
	fmt.Println(err)
	// Output:
	// ctx=3 src=any tag=42 <nil> true
	// match: tag 16777215 out of range [0, 16777214]
}
