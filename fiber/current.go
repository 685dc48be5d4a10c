package fiber

import "sync"

// workersByThread maps the OS thread id of every running worker to the
// worker: a fiber runs on its worker's locked thread, and no other
// goroutine ever runs there.
var workersByThread sync.Map // int → *worker

// Current returns the fiber the caller runs in, or nil if the caller is a
// plain goroutine (or a worker outside its fibers). It costs a system call
// (gettid) and a map lookup: it is for blocking calls that are given no
// waiter and must not block a fiber's worker. On systems other than Linux
// it cannot tell, and returns nil.
func Current() *Fiber {
	tid, ok := threadID()
	if !ok {
		return nil
	}
	v, ok := workersByThread.Load(tid)
	if !ok {
		return nil
	}
	// The worker stored cur before it switched to the fiber now calling
	// (the coroutine switch orders the two), and changes it only when
	// that fiber switches away again.
	return v.(*worker).cur
}

// enterThread records the calling worker's thread (at its start), and
// returns the function that forgets it (at its end).
func (w *worker) enterThread() func() {
	tid, ok := threadID()
	if !ok {
		return func() {}
	}
	workersByThread.Store(tid, w)
	return func() { workersByThread.Delete(tid) }
}
