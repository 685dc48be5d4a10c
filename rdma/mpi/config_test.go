//go:build mpi

package mpi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/mpi"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

// TestConfigRanges checks the ranges of Config.Spin, Config.Whole and
// Config.MovedPieces and their defaults, as Validate and String see them.
func TestConfigRanges(t *testing.T) {
	base := mpi.Config{Exchange: rdmatest.MemExchange(1)[0], Layout: rdma.NewLayout(1)}
	spin := func(v int) func(*mpi.Config) { return func(c *mpi.Config) { c.Spin = v } }
	whole := func(v int) func(*mpi.Config) { return func(c *mpi.Config) { c.Whole = v } }
	pieces := func(v int) func(*mpi.Config) { return func(c *mpi.Config) { c.MovedPieces = v } }
	for _, tc := range []struct {
		name string
		set  func(*mpi.Config)
		ok   bool
		str  string
	}{
		{"Spin 0", spin(0), true, "Spin: 16,"},
		{"Spin -1", spin(-1), true, "Spin: -1,"},
		{"Spin 64", spin(64), true, "Spin: 64,"},
		{"Spin -2", spin(-2), false, ""},
		{"Spin 1<<20+1", spin(1<<20 + 1), false, ""},
		{"Whole 0", whole(0), true, "Whole: 0,"},
		{"Whole -1", whole(-1), true, "Whole: -1,"},
		{"Whole 128", whole(128), true, "Whole: 128,"},
		{"Whole 127", whole(127), false, ""},
		{"Whole -2", whole(-2), false, ""},
		{"MovedPieces 0", pieces(0), true, "MovedPieces: 0}"},
		{"MovedPieces -1", pieces(-1), true, "MovedPieces: -1}"},
		{"MovedPieces 64", pieces(64), true, "MovedPieces: 64}"},
		{"MovedPieces 65", pieces(65), false, ""},
		{"MovedPieces -2", pieces(-2), false, ""},
	} {
		c := base
		tc.set(&c)
		err := c.Validate()
		if tc.ok != (err == nil) {
			t.Errorf("%s: Validate = %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		if !tc.ok {
			if !errors.Is(err, mpi.ErrInvalidConfig) {
				t.Errorf("%s: %v does not match ErrInvalidConfig", tc.name, err)
			}
			continue
		}
		if s := c.String(); !strings.Contains(s, tc.str) {
			t.Errorf("%s: String() = %q, want it to contain %q", tc.name, s, tc.str)
		}
	}
}
