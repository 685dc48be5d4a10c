package comm

// Gather, scatter, allgather and all-to-all, with their v-forms. Blocks
// are placed by rank: block i of a gathered buffer is rank i's. The v-forms
// take per-rank counts and displacements (element offsets) as MPI does.

// blocks returns p counts of n and their displacements.
func blocks(p, n int) (counts, displs []int) {
	counts, displs = make([]int, p), make([]int, p)
	for i := range p {
		counts[i], displs[i] = n, i*n
	}
	return counts, displs
}

// Gather collects every rank's send (n elements each) into root's recv
// (Size()·n elements, rank i's at i·n). recv is used at root only. At
// root, send may be recv's own block (in place).
func (c *Comm[T]) Gather(send, recv []T, root int) error {
	_, err := c.gather(false, send, recv, root)
	return err
}

// Igather starts a Gather.
func (c *Comm[T]) Igather(send, recv []T, root int) (*CollRequest, error) {
	return c.gather(true, send, recv, root)
}

func (c *Comm[T]) gather(nb bool, send, recv []T, root int) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if err := checkRoot(root, p); err != nil {
			return err
		}
		if c.rank == root {
			return checkLen("Gather recv", len(recv), p*len(send))
		}
		return nil
	}
	if q, ok, err := c.viaShm("Gather", nb, check, &shmColl[T]{kind: kGather, send: send, recv: recv, root: root}); ok {
		return q, err
	}
	return c.launch("Gather", nb, check, func(s *sched) {
		counts, displs := blocks(p, len(send))
		buildGatherv(s, send, recv, counts, displs, root)
	})
}

// Gatherv collects rank i's send (counts[i] elements) into root's recv at
// displs[i]. counts, displs and recv are used at root only.
func (c *Comm[T]) Gatherv(send, recv []T, counts, displs []int, root int) error {
	_, err := c.gatherv(false, send, recv, counts, displs, root)
	return err
}

// Igatherv starts a Gatherv.
func (c *Comm[T]) Igatherv(send, recv []T, counts, displs []int, root int) (*CollRequest, error) {
	return c.gatherv(true, send, recv, counts, displs, root)
}

func (c *Comm[T]) gatherv(nb bool, send, recv []T, counts, displs []int, root int) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if err := checkRoot(root, p); err != nil {
			return err
		}
		if c.rank != root {
			return nil
		}
		if err := checkV("Gatherv recv", counts, displs, p, len(recv)); err != nil {
			return err
		}
		return checkLen("Gatherv send", len(send), counts[root])
	}
	if q, ok, err := c.viaShm("Gatherv", nb, check, &shmColl[T]{kind: kGather, send: send, recv: recv, root: root, counts: counts, displs: displs}); ok {
		return q, err
	}
	return c.launch("Gatherv", nb, check, func(s *sched) { buildGatherv(s, send, recv, counts, displs, root) })
}

// Scatter sends block i of root's send (Size()·n elements) to rank i's recv
// (n elements). send is used at root only.
func (c *Comm[T]) Scatter(send, recv []T, root int) error {
	_, err := c.scatter(false, send, recv, root)
	return err
}

// Iscatter starts a Scatter.
func (c *Comm[T]) Iscatter(send, recv []T, root int) (*CollRequest, error) {
	return c.scatter(true, send, recv, root)
}

func (c *Comm[T]) scatter(nb bool, send, recv []T, root int) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if err := checkRoot(root, p); err != nil {
			return err
		}
		if c.rank == root {
			return checkLen("Scatter send", len(send), p*len(recv))
		}
		return nil
	}
	if q, ok, err := c.viaShm("Scatter", nb, check, &shmColl[T]{kind: kScatter, send: send, recv: recv, root: root}); ok {
		return q, err
	}
	return c.launch("Scatter", nb, check, func(s *sched) {
		counts, displs := blocks(p, len(recv))
		buildScatterv(s, send, counts, displs, recv, root)
	})
}

// Scatterv sends counts[i] elements of root's send at displs[i] to rank
// i's recv. send, counts and displs are used at root only.
func (c *Comm[T]) Scatterv(send []T, counts, displs []int, recv []T, root int) error {
	_, err := c.scatterv(false, send, counts, displs, recv, root)
	return err
}

// Iscatterv starts a Scatterv.
func (c *Comm[T]) Iscatterv(send []T, counts, displs []int, recv []T, root int) (*CollRequest, error) {
	return c.scatterv(true, send, counts, displs, recv, root)
}

func (c *Comm[T]) scatterv(nb bool, send []T, counts, displs []int, recv []T, root int) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if err := checkRoot(root, p); err != nil {
			return err
		}
		if c.rank != root {
			return nil
		}
		if err := checkV("Scatterv send", counts, displs, p, len(send)); err != nil {
			return err
		}
		return checkLen("Scatterv recv", len(recv), counts[root])
	}
	if q, ok, err := c.viaShm("Scatterv", nb, check, &shmColl[T]{kind: kScatter, send: send, recv: recv, root: root, counts: counts, displs: displs}); ok {
		return q, err
	}
	return c.launch("Scatterv", nb, check, func(s *sched) { buildScatterv(s, send, counts, displs, recv, root) })
}

// Allgather collects every rank's send (n elements) into every rank's recv
// (Size()·n elements, rank i's at i·n): Bruck's algorithm below 64 KiB in
// all, a ring above.
func (c *Comm[T]) Allgather(send, recv []T) error {
	_, err := c.allgather(false, send, recv)
	return err
}

// Iallgather starts an Allgather.
func (c *Comm[T]) Iallgather(send, recv []T) (*CollRequest, error) {
	return c.allgather(true, send, recv)
}

func (c *Comm[T]) allgather(nb bool, send, recv []T) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if err := checkLen("Allgather recv", len(recv), p*len(send)); err != nil {
			return err
		}
		own := recv[c.rank*len(send) : (c.rank+1)*len(send)]
		if same, _ := overlap(send, own); same {
			return nil
		}
		return checkDisjoint(send, recv)
	}
	if q, ok, err := c.viaShm("Allgather", nb, check, &shmColl[T]{kind: kAllgather, send: send, recv: recv}); ok {
		return q, err
	}
	return c.launch("Allgather", nb, check, func(s *sched) { buildAllgather(s, send, recv) })
}

// Allgatherv collects rank i's send (counts[i] elements) into every rank's
// recv at displs[i] (ring).
func (c *Comm[T]) Allgatherv(send, recv []T, counts, displs []int) error {
	_, err := c.allgatherv(false, send, recv, counts, displs)
	return err
}

// Iallgatherv starts an Allgatherv.
func (c *Comm[T]) Iallgatherv(send, recv []T, counts, displs []int) (*CollRequest, error) {
	return c.allgatherv(true, send, recv, counts, displs)
}

func (c *Comm[T]) allgatherv(nb bool, send, recv []T, counts, displs []int) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if err := checkV("Allgatherv recv", counts, displs, p, len(recv)); err != nil {
			return err
		}
		if err := checkLen("Allgatherv send", len(send), counts[c.rank]); err != nil {
			return err
		}
		own := recv[displs[c.rank] : displs[c.rank]+counts[c.rank]]
		if same, _ := overlap(send, own); same {
			return nil
		}
		return checkDisjoint(send, recv)
	}
	if q, ok, err := c.viaShm("Allgatherv", nb, check, &shmColl[T]{kind: kAllgather, send: send, recv: recv, counts: counts, displs: displs}); ok {
		return q, err
	}
	return c.launch("Allgatherv", nb, check, func(s *sched) { buildRingAllgatherv(s, send, recv, counts, displs) })
}

// Alltoall sends block i of every rank's send (n elements per block) to
// rank i, which puts it at block (sender) of its recv. Small blocks go all
// at once, larger ones pairwise (Size()−1 rounds).
func (c *Comm[T]) Alltoall(send, recv []T) error {
	_, err := c.alltoall(false, send, recv)
	return err
}

// Ialltoall starts an Alltoall.
func (c *Comm[T]) Ialltoall(send, recv []T) (*CollRequest, error) {
	return c.alltoall(true, send, recv)
}

func (c *Comm[T]) alltoall(nb bool, send, recv []T) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if len(send)%p != 0 {
			return &CountError{Arg: "Alltoall send", Have: len(send), Want: p * (len(send) / p)}
		}
		if err := checkLen("Alltoall recv", len(recv), len(send)); err != nil {
			return err
		}
		return checkDisjointStrict(send, recv)
	}
	if q, ok, err := c.viaShm("Alltoall", nb, check, &shmColl[T]{kind: kAlltoall, send: send, recv: recv}); ok {
		return q, err
	}
	return c.launch("Alltoall", nb, check, func(s *sched) {
		n := len(send) / p
		counts, displs := blocks(p, n)
		buildAlltoallv(s, send, counts, displs, recv, counts, displs, n*c.size <= alltoallBurstMax)
	})
}

// checkDisjointStrict refuses any sharing, in place included.
func checkDisjointStrict[T any](a, c []T) error {
	if same, partial := overlap(a, c); same || partial {
		return ErrOverlap
	}
	return nil
}

// Alltoallv sends scounts[i] elements of send at sdispls[i] to rank i,
// which receives rcounts[j] elements from rank j into recv at rdispls[j]
// (pairwise exchange).
func (c *Comm[T]) Alltoallv(send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	_, err := c.alltoallv(false, send, scounts, sdispls, recv, rcounts, rdispls)
	return err
}

// Ialltoallv starts an Alltoallv.
func (c *Comm[T]) Ialltoallv(send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*CollRequest, error) {
	return c.alltoallv(true, send, scounts, sdispls, recv, rcounts, rdispls)
}

func (c *Comm[T]) alltoallv(nb bool, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*CollRequest, error) {
	p := c.Size()
	check := func() error {
		if err := checkV("Alltoallv send", scounts, sdispls, p, len(send)); err != nil {
			return err
		}
		if err := checkV("Alltoallv recv", rcounts, rdispls, p, len(recv)); err != nil {
			return err
		}
		if err := checkLen("Alltoallv own block", rcounts[c.rank], scounts[c.rank]); err != nil {
			return err
		}
		return checkDisjointStrict(send, recv)
	}
	if q, ok, err := c.viaShm("Alltoallv", nb, check, &shmColl[T]{kind: kAlltoallv, send: send, recv: recv, counts: rcounts, displs: rdispls, scounts: scounts, sdispls: sdispls}); ok {
		return q, err
	}
	return c.launch("Alltoallv", nb, check, func(s *sched) { buildAlltoallv(s, send, scounts, sdispls, recv, rcounts, rdispls, false) })
}
