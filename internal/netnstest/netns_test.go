package netnstest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fibermpi/fibermpi/comm"
	"github.com/fibermpi/fibermpi/endpoint"
	"github.com/fibermpi/fibermpi/fiber"
	"github.com/fibermpi/fibermpi/internal/fmpitest"
	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/route"
)

// The job's shape: nodes × perNode processes, one rank each.
const (
	nodes   = 2
	perNode = 2
	procs   = nodes * perNode
)

// expectEnv tells the children how their pairs must be connected:
// "nodes" (shared memory inside a node, TCP between) or "tcp" (every pair
// over loopback TCP, the fallback).
const expectEnv = "NETNSTEST_EXPECT"

// errNoNetem: the kernel has no netem queueing discipline.
var errNoNetem = errors.New("no netem (the kernel lacks sch_netem)")

// netns is a set of namespaces made for one run.
type netns struct {
	names []string
	addrs []string
	veth  []string // each node's end of the link, by node
}

// run runs a command, returning its combined output in the error.
func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// makeNetns creates the namespaces, one per node, joined by a veth pair,
// and registers their removal; netem adds 100 µs delay and 1% loss on
// both ends. It returns an error (and removes what it made) when this
// machine does not allow it.
func makeNetns(t *testing.T, netem bool) (*netns, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("not root: network namespaces need CAP_SYS_ADMIN")
	}
	for _, tool := range []string{"ip", "tc", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("no %s: %v", tool, err)
		}
	}
	id := strconv.Itoa(os.Getpid() % 10000000)
	n := &netns{}
	cleanup := func() {
		for _, name := range n.names {
			if err := run("ip", "netns", "del", name); err != nil {
				t.Errorf("removing namespace: %v", err)
			}
		}
	}
	veth := []string{"fv" + id + "a", "fv" + id + "b"}
	n.veth = veth
	steps := [][]string{}
	for i := range nodes {
		name := fmt.Sprintf("fmpi%s-%d", id, i)
		if err := run("ip", "netns", "add", name); err != nil {
			cleanup()
			return nil, err
		}
		n.names = append(n.names, name)
		n.addrs = append(n.addrs, fmt.Sprintf("10.77.0.%d", i+1))
	}
	steps = append(steps, []string{"ip", "link", "add", veth[0], "type", "veth", "peer", "name", veth[1]})
	for i := range nodes {
		ns := n.names[i]
		steps = append(steps,
			[]string{"ip", "link", "set", veth[i], "netns", ns},
			[]string{"ip", "-n", ns, "addr", "add", n.addrs[i] + "/24", "dev", veth[i]},
			[]string{"ip", "-n", ns, "link", "set", veth[i], "up"},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			cleanup()
			return nil, err
		}
	}
	if netem {
		for i, ns := range n.names {
			if err := run("tc", "-n", ns, "qdisc", "add", "dev", veth[i], "root", "netem", "delay", "100us", "loss", "1%"); err != nil {
				cleanup()
				return nil, fmt.Errorf("%w: %v", errNoNetem, err)
			}
		}
	}
	t.Cleanup(cleanup)
	return n, nil
}

// wrapper is the shell command fmpirun starts for every rank: it puts the
// rank into its node's namespace with the node's host name and TCP
// address, then runs the test binary.
func (n *netns) wrapper() string {
	var b strings.Builder
	b.WriteString(`node=$((FIBERMPI_RANK / ` + strconv.Itoa(perNode) + `)); case $node in `)
	for i, name := range n.names {
		fmt.Fprintf(&b, `%d) ns=%s; addr=%s;; `, i, name, n.addrs[i])
	}
	b.WriteString(`esac; export FIBERMPI_TCP_LISTEN=$addr:0; ` +
		`exec ip netns exec $ns unshare --uts sh -c 'hostname "fmpi-node$0" && exec "$@"' $node "$@"`)
	return b.String()
}

// TestMultiNode runs the job across the namespaces, once plain and once
// with netem's delay and loss on the link between the nodes.
func TestMultiNode(t *testing.T) {
	for _, c := range []struct {
		name  string
		netem bool
	}{{"plain", false}, {"netem", true}} {
		t.Run(c.name, func(t *testing.T) {
			if fmpitest.Child() {
				if err := child(); err != nil {
					t.Fatal(err)
				}
				return
			}
			cmd := fmpitest.TestCommand(t, 0)
			opts := fmpitest.Options{Env: []string{expectEnv + "=nodes"}}
			n, err := makeNetns(t, c.netem)
			if errors.Is(err, errNoNetem) {
				fmt.Printf("netnstest: %v\n", err)
				t.Skipf("netem run impossible here: %v", err)
			}
			if err != nil {
				fmt.Printf("netnstest: no network namespaces (%v): every process on loopback, all pairs over TCP\n", err)
				t.Logf("no network namespaces (%v): every process on loopback, all pairs over TCP", err)
				opts.Env = []string{expectEnv + "=tcp", "FIBERMPI_TRANSPORT=tcp"}
			} else {
				cmd = append([]string{"sh", "-c", n.wrapper(), "sh"}, cmd...)
			}
			out, err := fmpitest.Start(t, procs, opts, cmd...).Wait()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for r := range procs {
				if !strings.Contains(out, fmt.Sprintf("netnstest: rank %d ok", r)) {
					t.Errorf("rank %d did not report\n%s", r, out)
				}
			}
			t.Logf("\n%s", grep(out, "netnstest:"))
		})
	}
}

func grep(s, substr string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// child is one process's part: it checks which backend reaches each other
// process, then runs point-to-point, rendezvous and collective traffic
// and checks the results.
func child() (err error) {
	p, err := endpoint.Init(endpoint.ThreadSingle, endpoint.Options{Workers: 1})
	if err != nil {
		return err
	}
	defer func() {
		if ferr := p.Finalize(); err == nil {
			err = ferr
		}
	}()
	me := p.Rank()
	if p.Procs() != procs {
		return fmt.Errorf("a job of %d processes, want %d", p.Procs(), procs)
	}
	r, ok := p.Transport().(*route.Transport)
	if !ok {
		return fmt.Errorf("transport %s is no router", p.Transport().Name())
	}
	host, _ := os.Hostname()
	expect := os.Getenv(expectEnv)
	var used []string
	for q := range procs {
		if q == me {
			continue
		}
		b, err := r.Backend(rdma.Addr(q)) // process q's world endpoint
		if err != nil {
			return err
		}
		want := "tcp"
		if expect == "nodes" && q/perNode == me/perNode {
			want = "shm"
		}
		if !strings.HasPrefix(b.Name(), want) {
			return fmt.Errorf("process %d is reached by %s, want %s", q, b.Name(), want)
		}
		used = append(used, fmt.Sprintf("%d:%s", q, b.Name()))
	}

	ep, err := p.World().Register(fiber.NewGoroutineWaiter())
	if err != nil {
		return err
	}
	defer ep.Unregister()
	c, err := comm.World[int64](ep)
	if err != nil {
		return err
	}
	// A ring of small messages.
	token := []int64{0}
	if me != 0 {
		if _, err := c.Recv(token, me-1, 1); err != nil {
			return err
		}
	}
	token[0] += int64(me)
	if err := c.Send(token, (me+1)%procs, 1); err != nil {
		return err
	}
	if me == 0 {
		if _, err := c.Recv(token, procs-1, 1); err != nil {
			return err
		}
		if want := int64(procs * (procs - 1) / 2); token[0] != want {
			return fmt.Errorf("the token came back as %d, want %d", token[0], want)
		}
	}
	// Large messages (rendezvous) with the process opposite, on the
	// other node, both ways at once.
	const big = 1 << 19 // int64s: 4 MiB
	peer := (me + perNode) % procs
	send, recv := make([]int64, big), make([]int64, big)
	for i := range send {
		send[i] = int64(me)<<40 | int64(i)
	}
	if _, err := c.Sendrecv(send, peer, 2, recv, peer, 2); err != nil {
		return err
	}
	for i, v := range recv {
		if v != int64(peer)<<40|int64(i) {
			return fmt.Errorf("large message from %d: element %d is %#x", peer, i, v)
		}
	}
	// Collectives.
	for round := range 20 {
		sum := []int64{0}
		if err := c.Allreduce([]int64{int64(me + round)}, sum, comm.Sum[int64]()); err != nil {
			return err
		}
		if want := int64(procs*(procs-1)/2 + procs*round); sum[0] != want {
			return fmt.Errorf("Allreduce round %d: %d, want %d", round, sum[0], want)
		}
	}
	buf := make([]int64, 1<<17)
	root := 1
	if me == root {
		for i := range buf {
			buf[i] = int64(i * 3)
		}
	}
	if err := c.Bcast(buf, root); err != nil {
		return err
	}
	for i, v := range buf {
		if v != int64(i*3) {
			return fmt.Errorf("Bcast: element %d is %d", i, v)
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	fmt.Printf("netnstest: rank %d ok on %s, %s, peers %s\n", me, host, time.Now().Format("15:04:05"), strings.Join(used, " "))
	return nil
}

// TestRedBlackAcrossNodes runs examples/redblack's message-passing
// variants across the namespaces, 2 processes a node (shared memory inside
// a node, TCP between): process 0 gathers the stripes and checks the grid
// bit for bit against its own sequential run.
func TestRedBlackAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: builds examples/redblack")
	}
	bin := filepath.Join(t.TempDir(), "redblack")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/fibermpi/fibermpi/examples/redblack").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := []string{bin, "-variant", "mpi,hybrid,funneled", "-n", "41", "-iters", "8",
		"-threads", "2", "-endpoints", "2", "-workers", "2"}
	var opts fmpitest.Options
	n, err := makeNetns(t, false)
	if err != nil {
		fmt.Printf("netnstest: no network namespaces (%v): every process on loopback, all pairs over TCP\n", err)
		t.Logf("no network namespaces (%v): every process on loopback, all pairs over TCP", err)
		opts.Env = []string{"FIBERMPI_TRANSPORT=tcp"}
	} else {
		cmd = append([]string{"sh", "-c", n.wrapper(), "sh"}, cmd...)
	}
	out, err := fmpitest.Start(t, procs, opts, cmd...).Wait()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, v := range []string{"mpi", "hybrid", "funneled"} {
		if c := regexp.MustCompile(`(?m)^`+v+` .*identical`).FindAllString(out, -1); len(c) != 1 {
			t.Errorf("%d lines saying %s is identical to seq, want 1:\n%s", len(c), v, out)
		}
	}
	if strings.Contains(out, "DIFFERS") || !strings.Contains(out, fmt.Sprintf("process 0 of %d", procs)) {
		t.Errorf("output:\n%s", out)
	}
	t.Logf("\n%s", out)
}
