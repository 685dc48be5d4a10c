package endpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/fibermpi/fibermpi/packet"
)

// The environment variables a user sets at launch (fmpirun passes its
// environment to every process). Each fills an Options field the program
// left at its zero value, so a program's explicit choice wins; Init
// rejects a value it cannot parse with an *EnvError naming the variable.
// doc/ENVIRONMENT.md has the table of every FIBERMPI_ variable.
const (
	// EnvWorkers sets Options.Workers: the number of fiber workers, a
	// positive integer.
	EnvWorkers = "FIBERMPI_WORKERS"
	// EnvEagerLimit sets Options.EagerLimit: the largest message sent
	// eagerly, in bytes (a suffix k or K means KiB); a negative value
	// sends everything by rendezvous. Above the packet payload size it
	// raises Options.PayloadSize to match, when the program left that
	// unset (every pooled packet then holds as many bytes), up to
	// packet.MaxPayloadSize; over MPICH, 32k made 16–32 KiB messages about
	// twice as fast (BENCHMARKS.md, issue 17, session 23).
	EnvEagerLimit = "FIBERMPI_EAGER_LIMIT"
	// EnvProgress sets Options.Progress: "idle", "server" or "caller".
	EnvProgress = "FIBERMPI_PROGRESS"
	// EnvPin sets Options.Fiber.Pin and CPUs: "0" or "1" (false, true:
	// pin worker i to the i-th CPU the process may use), or a CPU list
	// such as "0,2,4-7" (pin worker i to its i-th CPU, round robin).
	EnvPin = "FIBERMPI_PIN"
	// EnvShmPut chooses how a rendezvous message's bytes go to another
	// process of the node. "rings" (the default; "auto" is the same):
	// through the shared-memory rings, the sender copying chunks in while
	// the receiver's progress copies them out (the sender writes the rest
	// by process_vm_writev if the receiver stops taking chunks for 50 µs),
	// except that a message of 64 KiB or more goes attached while that
	// measured faster towards its receiver (rdma/shm measures both ways
	// per peer): the sender writes half by process_vm_writev while the
	// receiver's progress reads the other half by process_vm_readv.
	// "attach": always one process_vm_writev of the sender's (the receiver
	// takes no part). "split": every message of 64 KiB or more attached
	// and split, unmeasured (for tests and comparisons). BENCHMARKS.md
	// (issue 12) has what each way measured.
	EnvShmPut = "FIBERMPI_SHM_PUT"
	// EnvMPIRendezvous chooses how a rendezvous message's bytes go to a
	// process reached through a production MPI (build tag mpi). "mpi" (the
	// default): the sender's transport posts them to MPI after the RTS, on
	// a tag of their own, and the receiver's posts their receive when a
	// receive matches the RTS, so that MPI's own rendezvous moves them; no
	// RTR, Put or Done is sent. "put": the RTR, Put and Done of every other
	// transport (rdma/mpi's Config.NoMove).
	EnvMPIRendezvous = "FIBERMPI_MPI_RENDEZVOUS"
	// EnvMPIWhole sets rdma/mpi's Config.Whole (build tag mpi): the
	// longest MPI message a packet goes in, in bytes (a suffix k or K
	// means KiB; at least 128), or -1 for one message whatever its length.
	// Unset, it is the MPI's default: 8192 under MPICH and 4032 under
	// Open MPI, just under their eager limits on one node here. Set it to
	// a little under the MPI's eager limit on the network the job uses.
	EnvMPIWhole = "FIBERMPI_MPI_WHOLE"
	// EnvMPIPieces sets rdma/mpi's Config.MovedPieces (build tag mpi): a
	// large message of at most this many times FIBERMPI_MPI_WHOLE bytes
	// goes as that many eager MPI messages instead of one by the MPI's
	// rendezvous; 1 to 64, or -1 for none. Unset, it is the MPI's default:
	// 4 under MPICH, none under other MPIs.
	EnvMPIPieces = "FIBERMPI_MPI_PIECES"
)

// ErrEnv is matched by an *EnvError.
var ErrEnv = errors.New("endpoint: bad environment variable")

// EnvError reports an environment variable whose value Init cannot use.
type EnvError struct {
	Name, Value string
	Reason      string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("endpoint: %s=%q: %s", e.Name, e.Value, e.Reason)
}

// Is reports whether target is ErrEnv.
func (e *EnvError) Is(target error) bool { return target == ErrEnv }

// withEnv returns o with the zero fields that the environment (looked up
// with lookup) sets filled in, or the first bad variable's *EnvError.
func (o Options) withEnv(lookup func(string) (string, bool)) (Options, error) {
	bad := func(name, v, reason string) (Options, error) {
		return o, &EnvError{Name: name, Value: v, Reason: reason}
	}
	if v, ok := lookup(EnvWorkers); ok && v != "" && o.Workers == 0 && o.Fiber.Workers == 0 {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return bad(EnvWorkers, v, "want a positive number of workers")
		}
		o.Workers = n
	}
	if v, ok := lookup(EnvEagerLimit); ok && v != "" && o.EagerLimit == 0 {
		n, err := parseBytes(v)
		if err != nil {
			return bad(EnvEagerLimit, v, "want a number of bytes (e.g. 4096 or 4k), or -1 for no eager messages")
		}
		if n == 0 {
			return bad(EnvEagerLimit, v, "0 is the default's own value; unset the variable instead")
		}
		switch payload := o.withDefaults().PayloadSize; {
		case n <= payload:
		case o.PayloadSize == 0 && n <= packet.MaxPayloadSize:
			// A packet must hold an eager message: the payload grows
			// with the limit, unless the program set it.
			o.PayloadSize = n
		case o.PayloadSize == 0:
			return bad(EnvEagerLimit, v, fmt.Sprintf("exceeds the largest packet payload, %d bytes", packet.MaxPayloadSize))
		default:
			return bad(EnvEagerLimit, v, fmt.Sprintf("exceeds the packet payload size the program set, %d bytes", payload))
		}
		o.EagerLimit = n
	}
	if v, ok := lookup(EnvProgress); ok && v != "" && o.Progress == ProgressIdle {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "idle":
			o.Progress = ProgressIdle
		case "server":
			o.Progress = ProgressServer
		case "caller":
			o.Progress = ProgressCaller
		default:
			return bad(EnvProgress, v, `want "idle", "server" or "caller"`)
		}
	}
	if v, ok := lookup(EnvPin); ok && v != "" && !o.Fiber.Pin {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "0", "false", "no", "off":
		case "1", "true", "yes", "on":
			o.Fiber.Pin = true
		default:
			cpus, err := parseCPUList(v)
			if err != nil {
				return bad(EnvPin, v, err.Error())
			}
			o.Fiber.Pin, o.Fiber.CPUs = true, cpus
		}
	}
	if v, ok := lookup(EnvTransport); ok && v != "" {
		switch v {
		case "tcp", "shm":
		case "mpi":
			if !mpiBuilt {
				return bad(EnvTransport, v, "this program is built without the tag mpi")
			}
		default:
			return bad(EnvTransport, v, `want "tcp", "shm" or "mpi" (or unset: shared memory within a node, TCP or MPI between)`)
		}
	}
	if v, ok := lookup(EnvBind); ok && v != "" && v != "core" && v != "none" {
		return bad(EnvBind, v, `want "core" or "none"`)
	}
	if v, ok := lookup(EnvShmPut); ok && v != "" && v != "auto" && v != "rings" && v != "attach" && v != "split" {
		return bad(EnvShmPut, v, `want "auto", "rings", "attach" or "split"`)
	}
	if v, ok := lookup(EnvMPIRendezvous); ok && v != "" && v != "mpi" && v != "put" {
		return bad(EnvMPIRendezvous, v, `want "mpi" or "put"`)
	}
	if _, _, err := mpiTuning(lookup); err != nil {
		return o, err
	}
	return o, nil
}

// parseBytes parses a number of bytes with an optional suffix k or K
// (KiB); any negative number is -1.
func parseBytes(v string) (int, error) {
	s, mult := strings.TrimSpace(v), 1
	if t, found := strings.CutSuffix(strings.ToLower(s), "k"); found {
		s, mult = t, 1024
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return -1, nil
	}
	return n * mult, nil
}

// mpiTuning reads FIBERMPI_MPI_WHOLE and FIBERMPI_MPI_PIECES (with
// lookup): rdma/mpi's Config.Whole and Config.MovedPieces, 0 where unset
// (the MPI's defaults). A bad value is an *EnvError. The ranges are
// rdma/mpi's Config.Validate's (128 bytes, mpi.MaxMovedPieces), checked here
// at Init, in every build, because mpi.New is collective: a process whose
// Config it refused would leave its peers waiting in New's fence.
func mpiTuning(lookup func(string) (string, bool)) (whole, pieces int, err error) {
	if v, ok := lookup(EnvMPIWhole); ok && v != "" {
		n, perr := parseBytes(v)
		if perr != nil || n >= 0 && n < 128 {
			return 0, 0, &EnvError{Name: EnvMPIWhole, Value: v, Reason: "want a number of bytes of at least 128 (e.g. 8192 or 8k), or -1 for no limit"}
		}
		whole = n
	}
	if v, ok := lookup(EnvMPIPieces); ok && v != "" {
		n, perr := strconv.Atoi(strings.TrimSpace(v))
		if perr != nil || n == 0 || n > 64 {
			return 0, 0, &EnvError{Name: EnvMPIPieces, Value: v, Reason: "want a number of pieces from 1 to 64, or -1 for none"}
		}
		pieces = max(n, -1)
	}
	return whole, pieces, nil
}

// fromEnv is withEnv of the process's environment.
func (o Options) fromEnv() (Options, error) { return o.withEnv(os.LookupEnv) }

// parseCPUList parses "0,2,4-7" into [0 2 4 5 6 7].
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("want 0, 1 or a CPU list such as 0,2,4-7 (bad part %q)", part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
