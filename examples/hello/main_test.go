package main

import (
	"os"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi/internal/fmpitest"
)

// TestMain lets the test binary be the program: fmpirun starts it with
// HELLO_CHILD=1, and it runs the ring instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("HELLO_CHILD") == "1" {
		if err := run(); err != nil {
			os.Stderr.WriteString("hello: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestOneProcess(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}

func TestThreeProcesses(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := fmpitest.Start(t, 3, fmpitest.Options{Env: []string{"HELLO_CHILD=1"}}, self).Wait()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := "hello from 3 processes (route(inproc+shm"; !strings.Contains(out, want) || !strings.Contains(out, "came back as 3") {
		t.Fatalf("output %q, want %q… and a token of 0+1+2", out, want)
	}
}
