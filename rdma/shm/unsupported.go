//go:build !linux

package shm

import (
	"time"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// Transport is the shared-memory transport; on this system New always
// fails with ErrUnsupported, and a Transport cannot be made.
type Transport struct{ _ struct{} }

// New fails with ErrUnsupported: the transport needs Linux.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, ErrUnsupported
}

var (
	_ rdma.Transport = (*Transport)(nil)
	_ rdma.Sleeper   = (*Transport)(nil)
)

// The methods exist so that code written for Linux compiles here; a
// Transport is never made, so they only report ErrUnsupported.

func (*Transport) Name() string                                      { return "shm" }
func (*Transport) Bind(rdma.Addr, rdma.Receiver, *packet.Pool) error { return ErrUnsupported }
func (*Transport) Unbind(rdma.Addr) error                            { return ErrUnsupported }
func (*Transport) Send(int, rdma.Addr, *packet.Packet) error         { return ErrUnsupported }
func (*Transport) Register([]byte) (rdma.Region, error)              { return rdma.Region{}, ErrUnsupported }
func (*Transport) Deregister(rdma.Region) error                      { return ErrUnsupported }
func (*Transport) Put(rdma.Addr, rdma.Region, uint64, []byte) error  { return ErrUnsupported }
func (*Transport) Get(rdma.Addr, rdma.Region, uint64, []byte) error  { return ErrUnsupported }
func (*Transport) Progress(int) int                                  { return 0 }
func (*Transport) Sleep(time.Duration)                               {}
func (*Transport) CheckPeers() error                                 { return ErrUnsupported }
func (*Transport) Close() error                                      { return ErrUnsupported }
