package fiber

import "sync"

// Synchronization for the fibers and goroutines of one process that
// yields a fiber instead of blocking its worker: sync.WaitGroup and
// sync.Mutex block the worker's OS thread, and with it every fiber of the
// worker (at one worker, the whole program). Each waiting caller passes
// its own Waiter (a fiber's f.Waiter(), or fiber.NewGoroutineWaiter() made
// once per goroutine); any number of callers may wait at once, unlike on
// an Event. The internal lock is held only for a few instructions, never
// across a wait.

// WaitGroup waits for a collection of tasks to finish, as sync.WaitGroup
// does, with any number of waiters, fibers or goroutines. The zero value
// is ready; a WaitGroup must not be copied after first use.
type WaitGroup struct {
	mu      sync.Mutex
	n       int
	waiters []*Waiter
}

// Add adds delta, which may be negative, to the counter. When it reaches
// zero every waiter wakes; below zero Add panics, as sync.WaitGroup's does.
func (g *WaitGroup) Add(delta int) {
	g.mu.Lock()
	g.n += delta
	if g.n < 0 {
		g.mu.Unlock()
		panic("fiber: negative WaitGroup counter")
	}
	if g.n > 0 || len(g.waiters) == 0 {
		g.mu.Unlock()
		return
	}
	ws := g.waiters
	g.waiters = nil
	g.mu.Unlock()
	for _, w := range ws {
		w.Wake()
	}
}

// Done decrements the counter by one.
func (g *WaitGroup) Done() { g.Add(-1) }

// Go adds one to the counter, runs fn on a new fiber of s, and marks it
// done when fn returns.
func (g *WaitGroup) Go(s *Scheduler, fn func(*Fiber)) error {
	g.Add(1)
	err := s.Spawn(func(f *Fiber) {
		defer g.Done()
		fn(f)
	})
	if err != nil {
		g.Done()
	}
	return err
}

// Wait returns once the counter is zero. The caller w (a fiber yields, a
// goroutine parks) must be the caller's own waiter.
func (g *WaitGroup) Wait(w *Waiter) {
	for {
		g.mu.Lock()
		if g.n == 0 {
			g.mu.Unlock()
			return
		}
		g.waiters = append(g.waiters, w)
		g.mu.Unlock()
		w.Block() // a wake-up left from an earlier wait just loops
	}
}

// Mutex is a mutual exclusion lock whose Lock yields a fiber (parks a
// goroutine) while another caller holds it, so a fiber may hold it across
// a blocking fibermpi call or fiber.Sleep. Waiting callers get the lock in
// the order they asked for it: Unlock hands it to the first. The zero
// value is unlocked; a Mutex must not be copied after first use.
type Mutex struct {
	mu     sync.Mutex
	locked bool
	queue  []*Waiter
	handed *Waiter // the waiter Unlock gave the lock to, until it takes it
}

// Lock locks m, waiting with w (the caller's own waiter) while another
// caller holds it.
func (m *Mutex) Lock(w *Waiter) {
	m.mu.Lock()
	if !m.locked {
		m.locked = true
		m.mu.Unlock()
		return
	}
	m.queue = append(m.queue, w)
	m.mu.Unlock()
	for {
		w.Block()
		m.mu.Lock()
		if m.handed == w {
			m.handed = nil
			m.mu.Unlock()
			return
		}
		m.mu.Unlock() // an earlier wait's wake-up: keep waiting
	}
}

// TryLock locks m if it is free and reports whether it did.
func (m *Mutex) TryLock() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locked {
		return false
	}
	m.locked = true
	return true
}

// Unlock unlocks m, handing it to the first waiting caller if there is
// one. Unlocking an unlocked Mutex panics.
func (m *Mutex) Unlock() {
	m.mu.Lock()
	if !m.locked {
		m.mu.Unlock()
		panic("fiber: Unlock of an unlocked Mutex")
	}
	if len(m.queue) == 0 {
		m.locked = false
		m.mu.Unlock()
		return
	}
	w := m.queue[0]
	m.queue = m.queue[1:]
	m.handed = w // the lock stays locked: it passes to w
	m.mu.Unlock()
	w.Wake()
}
