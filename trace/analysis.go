package trace

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Matrix is the communication matrix: Msgs[i][j] and Bytes[i][j] count
// what endpoint Addrs[i] sent to endpoint Addrs[j]. Addrs lists every
// endpoint that was recorded or sent to, in order.
type Matrix struct {
	Addrs       []int32
	Msgs, Bytes [][]int64
}

// Matrix builds d's communication matrix from the ranks' pair counters
// (exact, whether or not records were dropped). Collectives count as the
// point-to-point messages they are made of.
func (d *Data) Matrix() Matrix {
	var addrs []int32
	for _, r := range d.Ranks {
		addrs = append(addrs, r.Addr)
		for _, p := range r.Pairs {
			addrs = append(addrs, p.To)
		}
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	m := Matrix{Addrs: addrs, Msgs: square(len(addrs)), Bytes: square(len(addrs))}
	for _, r := range d.Ranks {
		i, _ := slices.BinarySearch(addrs, r.Addr)
		for _, p := range r.Pairs {
			j, _ := slices.BinarySearch(addrs, p.To)
			m.Msgs[i][j] += p.Msgs
			m.Bytes[i][j] += p.Bytes
		}
	}
	return m
}

func square(n int) [][]int64 {
	cells := make([]int64, n*n)
	m := make([][]int64, n)
	for i := range m {
		m[i] = cells[i*n : (i+1)*n : (i+1)*n]
	}
	return m
}

// RankSummary is how one endpoint spent the recording period, mpiP-style.
// Time in point-to-point calls excludes the time they spent inside
// collectives; Compute is the rest of the period.
type RankSummary struct {
	Addr             int32
	Proc             int
	Total            time.Duration
	Compute          time.Duration
	P2P              time.Duration // in send, receive and wait calls outside collectives
	Coll             time.Duration // in blocking collectives
	Calls, CollCalls int64
	SentMsgs, SentB  int64
	RecvMsgs         int64
	Dropped          int64
}

// Summary returns a summary per recorded endpoint.
func (d *Data) Summary() []RankSummary {
	out := make([]RankSummary, 0, len(d.Ranks))
	for _, r := range d.Ranks {
		s := RankSummary{Addr: r.Addr, Proc: r.Proc, Total: time.Duration(r.End - r.Start), Dropped: r.Dropped}
		var p2p, coll []span
		for _, rec := range r.Records {
			switch rec.Kind {
			case KindSend, KindRecv, KindWait:
				p2p = append(p2p, span{rec.Start, rec.End})
				if rec.Kind != KindWait {
					s.Calls++
				}
			case KindColl:
				coll = append(coll, span{rec.Start, rec.End})
				s.CollCalls++
			case KindMatch:
				s.RecvMsgs++
			}
		}
		for _, p := range r.Pairs {
			s.SentMsgs += p.Msgs
			s.SentB += p.Bytes
		}
		cu := union(coll)
		all := union(append(p2p, coll...))
		s.Coll = time.Duration(length(cu))
		s.P2P = time.Duration(length(all) - length(cu))
		s.Compute = max(s.Total-time.Duration(length(all)), 0)
		out = append(out, s)
	}
	return out
}

type span struct{ a, b int64 }

// union merges overlapping spans (calls of several callers of one
// ThreadMultiple endpoint, or calls nested in a collective).
func union(s []span) []span {
	slices.SortFunc(s, func(x, y span) int { return cmp.Compare(x.a, y.a) })
	var u []span
	for _, x := range s {
		if n := len(u); n > 0 && x.a <= u[n-1].b {
			u[n-1].b = max(u[n-1].b, x.b)
			continue
		}
		u = append(u, x)
	}
	return u
}

func length(s []span) int64 {
	var n int64
	for _, x := range s {
		n += x.b - x.a
	}
	return n
}

// WriteSummary prints the summary as a table.
func WriteSummary(w io.Writer, sum []RankSummary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "endpoint\tprocess\ttime\tcompute\tp2p\tcoll\tp2p%%\tcoll%%\tcalls\tcolls\tsent msgs\tsent bytes\trecv msgs\t\n")
	pct := func(a, b time.Duration) string {
		if b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", 100*float64(a)/float64(b))
	}
	for _, s := range sum {
		fmt.Fprintf(tw, "%d\t%d\t%v\t%v\t%v\t%v\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", s.Addr, s.Proc,
			s.Total.Round(time.Microsecond), s.Compute.Round(time.Microsecond), s.P2P.Round(time.Microsecond),
			s.Coll.Round(time.Microsecond), pct(s.P2P, s.Total), pct(s.Coll, s.Total),
			s.Calls, s.CollCalls, s.SentMsgs, s.SentB, s.RecvMsgs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range sum {
		if s.Dropped > 0 {
			fmt.Fprintf(w, "endpoint %d: %d records dropped (buffer full); its counts are exact\n", s.Addr, s.Dropped)
		}
	}
	return nil
}
