package endpoint_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/fibermpi/fibermpi/endpoint"
)

// Mprobe takes the next matching message out of matching; Mrecv receives
// exactly it, into a buffer of the size Message.Status reported.
func ExampleEndpoint_Mprobe() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if ep.Rank() == 1 {
			return "", ep.Send(w, 1, 0, 6, []byte("sized by Mprobe"))
		}
		m, err := ep.Mprobe(w, endpoint.AnySource, endpoint.AnyTag)
		if err != nil {
			return "", err
		}
		buf := make([]byte, m.Status().Count)
		st, err := ep.Mrecv(m, buf)
		return fmt.Sprintf("%q from %d, tag %d", buf, st.Source, st.Tag), err
	})
	// Output: "sized by Mprobe" from 1, tag 6
}

// Mrecv receives a probed message once; the handle is then used up.
func ExampleEndpoint_Mrecv() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if err := ep.Send(w, 0, 0, 0, []byte{1, 2, 3}); err != nil { // to itself
			return "", err
		}
		m, err := ep.Mprobe(w, 0, 0)
		if err != nil {
			return "", err
		}
		st, err := ep.Mrecv(m, make([]byte, 3))
		_, again := ep.Mrecv(m, make([]byte, 3))
		return fmt.Sprint(st.Count, err, errors.Is(again, endpoint.ErrMessageUsed)), nil
	})
	// Output: 3 <nil> true
}

// Improbe does not wait: false, and nothing taken, when no message
// matches.
func ExampleEndpoint_Improbe() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		_, before, err := ep.Improbe(w, 0, 0)
		if err != nil {
			return "", err
		}
		if err := ep.Send(w, 0, 0, 0, []byte("x")); err != nil {
			return "", err
		}
		m, after, err := ep.Improbe(w, 0, 0)
		if err != nil {
			return "", err
		}
		q, err := ep.Imrecv(m, make([]byte, 1))
		if err == nil {
			err = ep.Wait(q)
		}
		return fmt.Sprint(before, after), err
	})
	// Output: false true
}

// Imrecv starts the receive of a probed message; an eager one is complete
// when it returns.
func ExampleEndpoint_Imrecv() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if ep.Rank() == 1 {
			return "", ep.Send(w, 1, 0, 0, []byte("small"))
		}
		m, err := ep.Mprobe(w, 1, 0)
		if err != nil {
			return "", err
		}
		buf := make([]byte, 5)
		q, err := ep.Imrecv(m, buf)
		if err != nil {
			return "", err
		}
		done := q.Test()
		return fmt.Sprint(string(buf), " complete at once: ", done), ep.Wait(q)
	})
	// Output: small complete at once: true
}

// Message.Status tells the probed message's source, tag and size in bytes
// before it is received.
func ExampleMessage_Status() {
	each(2, func(ep *endpoint.Endpoint) (string, error) {
		w := ep.World()
		if ep.Rank() == 1 {
			return "", ep.Send(w, 1, 0, 3, make([]byte, 10000)) // above the eager limit
		}
		m, err := ep.Mprobe(w, endpoint.AnySource, endpoint.AnyTag)
		if err != nil {
			return "", err
		}
		st := m.Status()
		_, err = ep.Mrecv(m, make([]byte, st.Count))
		return fmt.Sprintf("source %d tag %d, %d bytes", st.Source, st.Tag, st.Count), err
	})
	// Output: source 1 tag 3, 10000 bytes
}

// A bad FIBERMPI_ value stops Init with an *EnvError naming the variable.
func ExampleEnvError() {
	os.Setenv(endpoint.EnvProgress, "fast")
	defer os.Unsetenv(endpoint.EnvProgress)
	_, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{})
	var ee *endpoint.EnvError
	fmt.Println(errors.As(err, &ee), ee.Name)
	fmt.Println(err)
	// Output:
	// true FIBERMPI_PROGRESS
	// endpoint: FIBERMPI_PROGRESS="fast": want "idle", "server" or "caller"
}

// Process.Rank is this process's index in the job; Transport names what
// carries its packets.
func ExampleProcess_Rank() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		p := ep.Proc()
		return fmt.Sprint(p.Rank(), " ", p.Transport().Name()), nil
	})
	// Output: 0 inproc
}

// Transport is the transport the process's endpoints use.
func ExampleProcess_Transport() {
	each(1, func(ep *endpoint.Endpoint) (string, error) {
		return ep.Proc().Transport().Name(), nil
	})
	// Output: inproc
}
