//go:build mpi

package mpi

import "testing"

// TestDefaultsByLibrary checks how New resolves Whole and MovedPieces 0
// from MPI_Get_library_version's first line, and that a value set stays.
func TestDefaultsByLibrary(t *testing.T) {
	const (
		mpich = "MPICH Version:      4.0.2"
		ompi  = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022"
		other = "Intel(R) MPI Library 2021.9"
	)
	for _, tc := range []struct {
		lib           string
		whole, pieces int // set
		wantWhole     int
		wantPieces    int
	}{
		{mpich, 0, 0, DefaultWhole, DefaultMovedPieces},
		{ompi, 0, 0, DefaultWholeOpenMPI, -1},
		{other, 0, 0, -1, -1},
		{mpich, -1, -1, -1, -1},
		{ompi, 8192, 2, 8192, 2},
		{other, 256, 3, 256, 3},
	} {
		if got := wholeFor(tc.whole, tc.lib); got != tc.wantWhole {
			t.Errorf("wholeFor(%d, %q) = %d, want %d", tc.whole, tc.lib, got, tc.wantWhole)
		}
		if got := movedPiecesFor(tc.pieces, tc.lib); got != tc.wantPieces {
			t.Errorf("movedPiecesFor(%d, %q) = %d, want %d", tc.pieces, tc.lib, got, tc.wantPieces)
		}
	}
}
