package endpoint

// Takes returns how many messages h's blocking Recv took from a transport
// itself (takeRecv).
func Takes(h *Endpoint) uint64 { return h.takes }

// CanTake reports whether h's blocking Recv from world rank src may take
// its messages from a transport itself (mayTake: src lives in another
// process whose transport is an rdma.EagerTaker, and the receiving fiber
// is alone on its worker; takeRecv's other conditions are the receive's
// own).
func CanTake(h *Endpoint, src int) bool {
	_, _, ok := h.mayTake(h.World(), src)
	return ok
}
