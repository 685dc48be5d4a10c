package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fibermpi/fibermpi/internal/bootwire"
)

// Running on several hosts. Config.Hosts lists them, each with a number of
// slots; the ranks fill the slots in order (host by host, then around
// again): "a,b" -n 4 places ranks 0 and 2 on a, 1 and 3 on b; "a:2,b:2"
// places 0–1 on a, 2–3 on b. A host that is this machine ("localhost",
// its name, or an address of one of its interfaces) is started directly;
// the others through Config.SSH, the ordinary ssh client by default,
// which runs on the remote host
//
//	cd <this directory> 2>/dev/null; exec env FIBERMPI_…=… NAME=value … program args
//
// so the remote side needs only the program at the same path. The
// processes there join the bootstrap over TCP: fmpirun listens, besides
// its unix socket, on the address of this machine that routes to each
// remote host (or Config.Listen), port chosen by the kernel, and gives
// those processes FIBERMPI_BOOT=tcp:<address>:<port>. The job id, 64
// random bits, is the secret of the join: a connection whose Hello
// carries another is refused and logged, and harms nobody. Such a
// process ends itself a second after its connection to fmpirun is lost
// or the job fails (bootstrap), since killing its ssh client does not
// reach it.

// A Host is where some of the job's processes run.
type Host struct {
	Name  string // a host name or address, as ssh takes it
	Slots int    // processes placed on it per round (≥ 1)
}

// ParseHosts reads a -hosts list: "a,b:2,c" (slots after a colon, 1 by
// default; an IPv6 address in brackets, "[fd00::1]:2").
func ParseHosts(list string) ([]Host, error) {
	var hosts []Host
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		h, err := parseHost(f)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("launch: no host in %q", list)
	}
	return hosts, nil
}

// parseHost reads "name", "name:slots" or "[v6]:slots".
func parseHost(s string) (Host, error) {
	name, slots := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return Host{}, fmt.Errorf("launch: host %q: no closing bracket", s)
		}
		name, slots = s[1:end], strings.TrimPrefix(s[end+1:], ":")
	} else if i := strings.LastIndex(s, ":"); i >= 0 && strings.Count(s, ":") == 1 {
		name, slots = s[:i], s[i+1:]
	}
	h := Host{Name: name, Slots: 1}
	if slots != "" {
		n, err := strconv.Atoi(slots)
		if err != nil || n < 1 {
			return Host{}, fmt.Errorf("launch: host %q: %q is not a number of slots (≥ 1)", s, slots)
		}
		h.Slots = n
	}
	if h.Name == "" || strings.ContainsAny(h.Name, " \t'\"$`;&|<>\\") {
		return Host{}, fmt.Errorf("launch: %q is not a host name", s)
	}
	return h, nil
}

// ReadHostfile reads a host file: one host a line, as "name", "name:N" or
// "name slots=N"; blank lines and text after '#' are ignored.
func ReadHostfile(path string) ([]Host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	defer f.Close()
	var hosts []Host
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		h, err := parseHost(fields[0])
		if err == nil && len(fields) > 1 {
			v, ok := strings.CutPrefix(fields[1], "slots=")
			n, cerr := strconv.Atoi(v)
			if !ok || cerr != nil || n < 1 || len(fields) > 2 {
				err = fmt.Errorf("launch: %q: want \"name\", \"name:N\" or \"name slots=N\"", strings.TrimSpace(text))
			}
			h.Slots = n
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		hosts = append(hosts, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("launch: %s: %w", path, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("launch: %s lists no host", path)
	}
	return hosts, nil
}

// place returns the host of each of n ranks: the slots in order, around
// again until every rank has one.
func place(hosts []Host, n int) []string {
	at := make([]string, 0, n)
	for len(at) < n {
		for _, h := range hosts {
			for range h.Slots {
				if len(at) < n {
					at = append(at, h.Name)
				}
			}
		}
	}
	return at
}

// isLocal reports whether host is this machine: "localhost", its host
// name, or a name or address of one of its interfaces' addresses.
func isLocal(host string) bool {
	if host == "localhost" {
		return true
	}
	if me, err := os.Hostname(); err == nil && host == me {
		return true
	}
	ips, err := resolve(host)
	if err != nil {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if ip.IsLoopback() {
			return true
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// resolve returns host's addresses, asking the resolver (bounded) only for
// a name that is no address.
func resolve(host string) ([]net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	ips := make([]net.IP, len(addrs))
	for i, a := range addrs {
		ips[i] = a.IP
	}
	return ips, nil
}

// routeFrom returns the address of this machine that packets to host leave
// from (a UDP "connection" sends nothing: the kernel only picks the route).
func routeFrom(host string) (net.IP, error) {
	ips, err := resolve(host)
	if err != nil {
		return nil, err
	}
	var last error
	for _, ip := range ips {
		c, err := net.Dial("udp", net.JoinHostPort(ip.String(), "9"))
		if err != nil {
			last = err
			continue
		}
		local := c.LocalAddr().(*net.UDPAddr).IP
		c.Close()
		return local, nil
	}
	if last == nil {
		last = errors.New("no address")
	}
	return nil, last
}

// listenTCP opens the TCP listeners the processes on the remote hosts
// join through, and returns the FIBERMPI_BOOT value for each remote host.
// With listen set, one listener there (an unspecified address is
// announced as the route to each host); otherwise one on each address of
// this machine that routes to a remote host.
func (j *job) listenTCP(remote []string, listen string) (map[string]string, error) {
	boot := make(map[string]string, len(remote))
	byAddr := map[string]net.Listener{}
	open := func(addr string) (net.Listener, error) {
		if ln, ok := byAddr[addr]; ok {
			return ln, nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("launch: listening for the remote processes on %s: %w", addr, err)
		}
		byAddr[addr] = ln
		j.tcp = append(j.tcp, ln)
		j.logf("listening for remote processes on %s", ln.Addr())
		return ln, nil
	}
	for _, host := range remote {
		if _, ok := boot[host]; ok {
			continue
		}
		var ip net.IP
		addr := listen
		if addr == "" || isUnspecified(addr) {
			var err error
			if ip, err = routeFrom(host); err != nil {
				return nil, fmt.Errorf("launch: no route to host %s: %w", host, err)
			}
		}
		if addr == "" {
			addr = net.JoinHostPort(ip.String(), "0")
		}
		ln, err := open(addr)
		if err != nil {
			return nil, err
		}
		a := ln.Addr().(*net.TCPAddr)
		if ip == nil {
			ip = a.IP
		}
		boot[host] = bootwire.TCPPrefix + net.JoinHostPort(ip.String(), strconv.Itoa(a.Port))
	}
	return boot, nil
}

func isUnspecified(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	return err == nil && (h == "" || net.ParseIP(h) != nil && net.ParseIP(h).IsUnspecified())
}

// remoteCommand is the shell command ssh runs on a remote host for one
// process: into this directory if there is one, then the program with env
// (each word quoted for the remote shell).
func remoteCommand(dir string, env []string, path string, args []string) string {
	var b strings.Builder
	if dir != "" {
		b.WriteString("cd " + shellQuote(dir) + " 2>/dev/null; ")
	}
	b.WriteString("exec env")
	for _, kv := range env {
		b.WriteString(" " + shellQuote(kv))
	}
	b.WriteString(" " + shellQuote(path))
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// DefaultSSH is the command that starts a process on another host when
// Config.SSH is empty: the ordinary ssh client, without X11 forwarding.
var DefaultSSH = []string{"ssh", "-x"}

// ssh is the remote-start command of the job.
func (j *job) ssh() []string {
	if len(j.cfg.SSH) > 0 {
		return j.cfg.SSH
	}
	return DefaultSSH
}

// placeHosts places the ranks on Config.Hosts and, if some are on other
// hosts, opens the TCP listeners they join through.
func (j *job) placeHosts() error {
	if len(j.cfg.Hosts) == 0 {
		return nil
	}
	j.hostOf = place(j.cfg.Hosts, j.cfg.N)
	j.remote = make([]bool, j.cfg.N)
	local := map[string]bool{}
	var remote []string
	for r, h := range j.hostOf {
		l, ok := local[h]
		if !ok {
			l = isLocal(h)
			local[h] = l
		}
		if !l {
			j.remote[r] = true
			remote = append(remote, h)
		}
		j.logf("rank %d: on %s (%s)", r, h, map[bool]string{true: "this machine", false: "through " + j.ssh()[0]}[l])
	}
	if len(remote) == 0 {
		return nil
	}
	boot, err := j.listenTCP(remote, j.cfg.Listen)
	if err != nil {
		return err
	}
	j.boot = boot
	return nil
}

// remoteCmd is the command that starts rank on its remote host: ssh, the
// host, and the shell command there, with the bootstrap's variables (over
// TCP), every FIBERMPI_ variable of base and those Config.Forward names.
func (j *job) remoteCmd(base []string, rank int, path string) *exec.Cmd {
	var env []string
	forward := func(k string) bool {
		switch k {
		case bootwire.EnvBoot, bootwire.EnvRank, bootwire.EnvSize, bootwire.EnvJobID, bootwire.EnvBootstrap:
			return false
		}
		return strings.HasPrefix(k, "FIBERMPI_") || slices.Contains(j.cfg.Forward, k)
	}
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); forward(k) {
			env = append(env, kv)
		}
	}
	env = append(env,
		bootwire.EnvBoot+"="+j.boot[j.hostOf[rank]],
		bootwire.EnvRank+"="+strconv.Itoa(rank),
		bootwire.EnvSize+"="+strconv.Itoa(j.cfg.N),
		bootwire.EnvJobID+"="+j.id)
	dir := j.cfg.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	ssh := j.ssh()
	argv := append(slices.Clone(ssh[1:]), j.hostOf[rank], remoteCommand(dir, env, path, j.cfg.Args))
	cmd := exec.Command(ssh[0], argv...)
	cmd.Env = base
	return cmd
}

// removeRemoteShm removes the job's shared-memory files on the remote
// hosts when the job failed (a process killed while it set up shared
// memory may leave its file; the others unlink theirs once mapped). Each
// host gets one ssh command, bounded by 10 s.
func (j *job) removeRemoteShm() {
	if j.boot == nil || j.fail == nil {
		return
	}
	ssh := j.ssh()
	for host := range j.boot {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		argv := append(slices.Clone(ssh[1:]), host, "rm -f "+shellQuote(j.cfg.ShmDir)+"/fibermpi-"+j.id+"*")
		out, err := exec.CommandContext(ctx, ssh[0], argv...).CombinedOutput()
		cancel()
		if err != nil {
			fmt.Fprintf(j.cfg.Stderr, "fmpirun: removing the job's shared memory on %s: %v: %s\n", host, err, strings.TrimSpace(string(out)))
		}
	}
}
