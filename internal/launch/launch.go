// Package launch is fmpirun: it starts the processes of a job on this node,
// serves their bootstrap (package bootstrap's fmpirun backend, over the
// frames of internal/bootwire) on a unix socket, forwards their output and
// signals, and ends the job when one of them fails. cmd/fmpirun is Main;
// internal/fmpitest runs test binaries under it.
//
// # The job's life
//
// Run starts N processes, each in its own process group, with the
// bootstrap variables in its environment, and serves their connections
// from one goroutine (every decision is taken there, in order). A process
// that exits with status 0 leaves the job without harm; one that exits with
// another status or is killed, or calls Abort, or is refused when it joins,
// ends the job: the others get a Failed notice naming it (at once if they
// are connected, as the answer to their join if they connect later), and
// after the grace period whatever is left of the job is killed with
// SIGKILL (each process group, so what they started goes too). When
// every process has exited, Run removes the socket and every
// /dev/shm/fibermpi-<jobid>* file, and returns a *Failure naming the first
// cause, or nil.
//
// An exit is classified after the connection of its process has ended (or
// half a second has passed), so an Abort written just before exiting is
// seen as the cause; a connection that ends without Close waits as long for
// the exit, so a collective that cannot complete names the real cause.
package launch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fibermpi/fibermpi"
)

// Defaults of Config.
const (
	DefaultGrace = time.Second // between the failure notice and SIGKILL
	// settle bounds how long an exit waits for its connection to end, and
	// an ended connection for its process's exit, before being classified.
	settle = 500 * time.Millisecond
	// handshakeTimeout bounds the wait for a new connection's Hello.
	handshakeTimeout = 10 * time.Second
	// writeTimeout bounds one write to a process that does not read.
	writeTimeout = 10 * time.Second
)

// Exit codes of Failure that do not come from a process.
const (
	CodeTimeout   = 124 // the job ran past Config.Timeout (as timeout(1))
	CodeNotFound  = 127 // the program was not found
	CodeCancelled = 130 // the context was cancelled
)

// Config describes a job. N and Program are required; every other zero
// value takes the default given.
type Config struct {
	N       int
	Program string   // looked up in PATH when it has no slash
	Args    []string // the program's arguments
	Env     []string // the processes' environment before the bootstrap's variables; nil: os.Environ()
	Dir     string   // working directory; "": this one
	// Stdin is given to rank 0 when it is a file or a pipe; a terminal is
	// not (the processes run in their own process groups, where reading
	// the terminal would stop them), and the other ranks read /dev/null.
	Stdin   *os.File
	Stdout  io.Writer // nil: os.Stdout
	Stderr  io.Writer // nil: os.Stderr
	Prefix  bool      // prefix every output line with "[rank] "
	Timeout time.Duration
	Grace   time.Duration    // 0: DefaultGrace
	Log     io.Writer        // if set, fmpirun tells what it does there (-v)
	Signals <-chan os.Signal // each signal received is forwarded to every process group
	ShmDir  string           // where the shared-memory segments live; "": /dev/shm
	SockDir string           // where the socket's directory is made; "": os.TempDir()

	// Hosts places the processes (hosts.go): nil runs them all on this
	// node; otherwise the ranks fill each host's slots in order, and those
	// on other hosts are started through SSH and join over TCP.
	Hosts []Host
	// SSH is the command that starts a process on another host, before
	// the host name: nil is DefaultSSH ("ssh -x").
	SSH []string
	// Forward names the variables of Env given to the processes on other
	// hosts, besides every FIBERMPI_ variable (ssh gives them none).
	Forward []string
	// Listen is the address the TCP socket for the processes of other
	// hosts binds, "host:port"; "": the address of this machine that
	// routes to each of them, port chosen by the kernel.
	Listen string
}

// Validate reports a Config that Run cannot start.
func (c *Config) Validate() error {
	if c.N < 1 {
		return fmt.Errorf("launch: %d processes (at least 1)", c.N)
	}
	if c.N > 1<<16 {
		return fmt.Errorf("launch: %d processes (at most %d)", c.N, 1<<16)
	}
	for _, h := range c.Hosts {
		if h.Name == "" || h.Slots < 1 {
			return fmt.Errorf("launch: host %q with %d slots", h.Name, h.Slots)
		}
	}
	if c.Hosts != nil && len(c.Hosts) == 0 {
		return errors.New("launch: an empty host list")
	}
	if c.Program == "" {
		return errors.New("launch: no program")
	}
	if c.Timeout < 0 || c.Grace < 0 {
		return fmt.Errorf("launch: negative timeout %v or grace %v", c.Timeout, c.Grace)
	}
	return nil
}

// Failure is why a job failed: the first process to fail (Rank ≥ 0) or the
// job as a whole (Rank -1: a timeout, a cancellation, a start-up error).
type Failure struct {
	Rank  int
	Cause string // "killed by signal 9 (SIGKILL)", "exit status 3", "aborted the job with code 7: bad input"
	Code  int    // the exit code fmpirun ends with
}

func (f *Failure) Error() string {
	if f.Rank < 0 {
		return f.Cause
	}
	return fmt.Sprintf("rank %d: %s", f.Rank, f.Cause)
}

// ExitCode is the exit code for Run's error: 0 for nil, Failure.Code for a
// *Failure, 1 otherwise.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if f, ok := errors.AsType[*Failure](err); ok {
		return f.Code
	}
	return 1
}

// Main is the fmpirun command: it parses args (without the command name),
// runs the job with the process's standard streams, forwards SIGINT and
// SIGTERM, prints one message naming the cause if the job fails, and
// returns the exit code.
func Main(args []string) int {
	fs := flag.NewFlagSet("fmpirun", flag.ContinueOnError)
	n := fs.Int("n", 0, "number of processes to start (required)")
	prefix := fs.Bool("prefix", false, "prefix each output line with \"[rank] \"")
	timeout := fs.Duration("timeout", 0, "end the job (exit 124) if it runs longer than this; 0: no limit")
	grace := fs.Duration("grace", DefaultGrace, "time the processes have to end after a failure, before SIGKILL")
	verbose := fs.Bool("v", false, "tell what fmpirun does on standard error")
	ver := fs.Bool("version", false, "print the version of fibermpi and of the build, and exit")
	hostList := fs.String("hosts", "", "run on these hosts: `a,b:2,...` (slots after a colon, 1 by default); ranks fill the slots in order")
	hostfile := fs.String("hostfile", "", "read the hosts from this `file`: one a line, \"name\", \"name:N\" or \"name slots=N\"")
	sshCmd := fs.String("ssh", os.Getenv(EnvSSH), "the `command` starting a process on another host, before the host (default \"ssh -x\"; also "+EnvSSH+")")
	listen := fs.String("listen", "", "the `host:port` the processes of other hosts join through (default: this machine's address towards each, any port)")
	var forward listFlag
	fs.Var(&forward, "x", "give the variable `NAME` to the processes on other hosts too (repeatable; FIBERMPI_ variables always go)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fmpirun -n N [-hosts a,b:2 | -hostfile f] [-ssh cmd] [-x NAME]... [-prefix] [-timeout d] [-grace d] [-v] program [args...]\n\n"+
			"Starts N processes of program, on this node or on the hosts given (through ssh),\njoined by fibermpi's bootstrap.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *ver {
		if fibermpi.PrintVersion(os.Stdout, "fmpirun") != nil {
			return 1
		}
		return 0
	}
	if fs.NArg() == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "fmpirun: need -n N (N ≥ 1) and a program")
		fs.Usage()
		return 2
	}
	var hosts []Host
	var err error
	switch {
	case *hostList != "" && *hostfile != "":
		fmt.Fprintln(os.Stderr, "fmpirun: -hosts and -hostfile together: give one")
		return 2
	case *hostList != "":
		hosts, err = ParseHosts(*hostList)
	case *hostfile != "":
		hosts, err = ReadHostfile(*hostfile)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fmpirun: %v\n", err)
		return 2
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	cfg := Config{
		N: *n, Program: fs.Arg(0), Args: fs.Args()[1:],
		Stdin: os.Stdin, Prefix: *prefix, Timeout: *timeout, Grace: *grace, Signals: sigs,
		Hosts: hosts, SSH: strings.Fields(*sshCmd), Forward: forward, Listen: *listen,
	}
	if *verbose {
		cfg.Log = os.Stderr
	}
	err = Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fmpirun: %v\n", err)
	}
	return ExitCode(err)
}

// EnvSSH is the variable fmpirun's -ssh defaults to: the command that
// starts a process on another host, e.g. "ssh -p 2222 -i key".
const EnvSSH = "FIBERMPI_SSH"

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
