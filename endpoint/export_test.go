package endpoint

// Takes returns how many messages h's blocking Recv took from a transport
// itself (takeRecv).
func Takes(h *Endpoint) uint64 { return h.takes }
