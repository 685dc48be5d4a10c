package rdmatest

import "github.com/fibermpi/fibermpi/rdma"

// HideLocal returns t seen only as an rdma.Transport: whatever else it
// implements (rdma.Local) is hidden. An endpoint layer over the in-process
// transport hidden this way cannot reach its peers directly and uses the
// protocols of a transport between processes (packets, the receiver-driven
// rendezvous), which lets their tests and benchmarks run in one process.
func HideLocal(t rdma.Transport) rdma.Transport { return hidden{t} }

// hidden embeds the interface, so it has exactly rdma.Transport's methods.
type hidden struct{ rdma.Transport }
