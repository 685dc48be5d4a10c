// Command fmpirun starts the processes of a fibermpi job on this node:
//
//	fmpirun -n N [-prefix] [-timeout d] [-grace d] [-v] program [args...]
//
// It starts N copies of program, each told its rank through the
// environment (FIBERMPI_RANK, FIBERMPI_SIZE, FIBERMPI_JOBID, FIBERMPI_BOOT:
// see package bootstrap), serves their key-value exchange, fences and
// barriers on a unix socket, and forwards their output (with -prefix, each
// line begins "[rank] ") and SIGINT/SIGTERM. Rank 0 reads fmpirun's
// standard input when it is a file or a pipe; the other ranks read nothing.
//
// When a process exits with a non-zero status or is killed, or calls Abort,
// the others are told (their bootstrap's Failed channel fires), get the
// grace period (-grace, default 1s) to end, and are then killed; fmpirun
// prints one line naming the rank and the cause and exits non-zero: the
// process's status, 128+signal for a killed one, the Abort code for an
// abort, 124 for -timeout. A process that exits with status 0 while the
// others run is not a failure. When the job ends, fmpirun removes its
// socket and every /dev/shm/fibermpi-<jobid>* file.
//
// If fmpirun itself dies, the processes see their connection close (Failed
// fires) and fibermpi's runtime ends them.
package main

import (
	"os"

	"github.com/fibermpi/fibermpi/internal/launch"
)

func main() {
	os.Exit(launch.Main(os.Args[1:]))
}
