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

// TestConfigSpin checks Config.Spin's range and its default.
func TestConfigSpin(t *testing.T) {
	base := mpi.Config{Exchange: rdmatest.MemExchange(1)[0], Layout: rdma.NewLayout(1)}
	for _, tc := range []struct {
		spin int
		ok   bool
		str  string
	}{
		{0, true, "Spin: 16,"},
		{-1, true, "Spin: -1,"},
		{64, true, "Spin: 64,"},
		{-2, false, ""},
		{1<<20 + 1, false, ""},
	} {
		c := base
		c.Spin = tc.spin
		err := c.Validate()
		if tc.ok != (err == nil) {
			t.Errorf("Spin %d: Validate = %v, want ok %v", tc.spin, err, tc.ok)
			continue
		}
		if !tc.ok {
			if !errors.Is(err, mpi.ErrInvalidConfig) {
				t.Errorf("Spin %d: %v does not match ErrInvalidConfig", tc.spin, err)
			}
			continue
		}
		if s := c.String(); !strings.Contains(s, tc.str) {
			t.Errorf("Spin %d: String() = %q, want it to contain %q", tc.spin, s, tc.str)
		}
	}
}
