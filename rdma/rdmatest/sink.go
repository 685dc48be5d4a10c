package rdmatest

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"

	"github.com/fibermpi/fibermpi/packet"
	"github.com/fibermpi/fibermpi/rdma"
)

// A test packet carries its identity — sending endpoint, stream (one
// sending goroutine's sequence towards one peer) and sequence number — in
// the low bits of Source, Context and SendID. Everything else about it, every
// other bit of every exported header field, its length and its payload, is
// a function of the identity and the destination, so the receiver can
// recompute what it should have got.
type pid struct {
	from   rdma.Addr
	stream uint32 // < 1<<16
	seq    uint32
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hashOf is the seed of everything a packet carries besides its identity.
func hashOf(to rdma.Addr, id pid) uint64 {
	return mix(mix(uint64(to)<<32|uint64(id.from)) ^ (uint64(id.stream)<<32 | uint64(id.seq)))
}

// header lists the exported fields of packet.Packet, which the suite
// fills through reflection so that a field added later is checked too.
var header = headerFields()

type headerField struct {
	index int
	name  string
	bits  uint // size in bits
	sign  bool
}

func headerFields() []headerField {
	typ := reflect.TypeFor[packet.Packet]()
	var fs []headerField
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		hf := headerField{index: i, name: f.Name, bits: uint(f.Type.Bits())}
		switch f.Type.Kind() {
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			hf.sign = true
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			panic(fmt.Sprintf("rdmatest: packet.Packet.%s is a %v; the suite fills only integer header fields", f.Name, f.Type))
		}
		fs = append(fs, hf)
	}
	return fs
}

// want returns the bits field f of the packet (to, id) must hold.
func (f headerField) want(to rdma.Addr, id pid, h uint64) uint64 {
	var v uint64
	switch f.name {
	case "Context":
		v = uint64(id.stream) | (h&0xffff)<<16
	case "Source":
		v = uint64(id.from)&0xffff | (h>>16&0xffff)<<16
	case "SendID":
		v = uint64(id.seq) | h&^0xffffffff
	default:
		v = mix(h + uint64(f.index)*0x51afd7ed558ccd)
	}
	return v & f.mask()
}

func (f headerField) mask() uint64 {
	if f.bits >= 64 {
		return ^uint64(0)
	}
	return 1<<f.bits - 1
}

func (f headerField) get(v reflect.Value) uint64 {
	if f.sign {
		return uint64(v.Field(f.index).Int()) & f.mask()
	}
	return v.Field(f.index).Uint()
}

func (f headerField) set(v reflect.Value, x uint64) {
	if f.sign {
		// Sign-extend so that SetInt stores exactly the low bits.
		v.Field(f.index).SetInt(int64(x<<(64-f.bits)) >> (64 - f.bits))
		return
	}
	v.Field(f.index).SetUint(x)
}

// payloadLen is the length of the packet (id) for payload capacity c:
// empty and full ones regularly, anything between otherwise.
func payloadLen(id pid, h uint64, c int) int {
	switch id.seq % 8 {
	case 0:
		return 0
	case 1:
		return c
	}
	return int(mix(h^0x5bd1e995) % uint64(c+1))
}

// fillPayload writes the payload of the packet with hash h into b.
func fillPayload(b []byte, h uint64) {
	s := h | 1
	var word [8]byte
	for i := 0; i < len(b); i += 8 {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		binary.LittleEndian.PutUint64(word[:], s)
		copy(b[i:], word[:])
	}
}

// stamp makes pk the packet (id) for destination to.
func stamp(pk *packet.Packet, to rdma.Addr, id pid) {
	h := hashOf(to, id)
	v := reflect.ValueOf(pk).Elem()
	for _, f := range header {
		f.set(v, f.want(to, id, h))
	}
	n := payloadLen(id, h, pk.Cap())
	fillPayload(pk.Payload()[:n], h)
	pk.SetLen(n)
}

// identify reads the identity of a packet that arrived at to and checks
// everything else it carries; the error describes the first difference.
func identify(pk *packet.Packet, to rdma.Addr) (pid, error) {
	id := pid{
		from:   rdma.Addr(uint32(pk.Source) & 0xffff),
		stream: pk.Context & 0xffff,
		seq:    uint32(pk.SendID),
	}
	h := hashOf(to, id)
	v := reflect.ValueOf(pk).Elem()
	for _, f := range header {
		if got, want := f.get(v), f.want(to, id, h); got != want {
			return id, fmt.Errorf("packet %+v at %d: header field %s is %#x, want %#x (header %v)", id, to, f.name, got, want, pk)
		}
	}
	if got, want := pk.Len(), payloadLen(id, h, pk.Cap()); got != want {
		return id, fmt.Errorf("packet %+v at %d: length %d, want %d", id, to, got, want)
	}
	want := make([]byte, pk.Len())
	fillPayload(want, h)
	for i, b := range pk.Data() {
		if b != want[i] {
			return id, fmt.Errorf("packet %+v at %d: payload byte %d is %#x, want %#x", id, to, i, b, want[i])
		}
	}
	return id, nil
}

// streamKey names one stream at a receiver.
type streamKey struct {
	from   rdma.Addr
	stream uint32
}

// sink is a Receiver that checks every test packet it gets, keeps count
// per stream, and returns the packet to the pool.
type sink struct {
	e    *env
	addr rdma.Addr
	// strict: every stream must arrive complete (seq 0, 1, 2, …); else
	// (while transports close under the senders) increasing is enough.
	strict bool

	mu    sync.Mutex
	next  map[streamKey]uint32 // the lowest seq still acceptable
	count int
}

func newSink(e *env, a rdma.Addr, strict bool) *sink {
	return &sink{e: e, addr: a, strict: strict, next: make(map[streamKey]uint32)}
}

// Receive implements rdma.Receiver.
func (s *sink) Receive(w int, pk *packet.Packet) {
	if pk == nil {
		s.e.failf("endpoint %d: Receive got a nil packet", s.addr)
		return
	}
	id, err := identify(pk, s.addr)
	s.e.putBack(w, pk)
	if err != nil {
		s.e.failf("%v", err)
	}
	k := streamKey{id.from, id.stream}
	s.mu.Lock()
	next, ok := s.next[k]
	switch {
	case err != nil:
	case !ok && s.strict && id.seq != 0:
		s.e.failf("endpoint %d: stream %v starts at seq %d: packets 0…%d lost or overtaken", s.addr, k, id.seq, id.seq-1)
	case ok && id.seq < next:
		s.e.failf("endpoint %d: stream %v: seq %d after seq %d: duplicated or out of order", s.addr, k, id.seq, next-1)
	case ok && s.strict && id.seq > next:
		s.e.failf("endpoint %d: stream %v: seq %d after seq %d: packets lost or overtaken", s.addr, k, id.seq, next-1)
	}
	if id.seq+1 > next {
		s.next[k] = id.seq + 1
	}
	s.count++
	s.mu.Unlock()
	s.e.arrived.Add(1)
}

// received returns the number of packets s got.
func (s *sink) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// seen returns the number of packets of stream k s accepted, as one past
// the highest sequence number.
func (s *sink) seen(k streamKey) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next[k]
}

// send stamps a fresh packet (id) for to and sends it from id.from as
// worker w. It may run on any goroutine.
func (e *env) send(w int, to rdma.Addr, id pid) error {
	pk, err := e.get(w)
	if err != nil {
		return err
	}
	stamp(pk, to, id)
	if err := e.hosts[id.from].Send(w, to, pk); err != nil {
		e.pool.Put(w, pk)
		return err
	}
	return nil
}

// mustSend is send on the test goroutine, as packet.NoWorker.
func (e *env) mustSend(to rdma.Addr, id pid) {
	e.t.Helper()
	if err := e.send(packet.NoWorker, to, id); err != nil {
		e.t.Fatalf("Send %+v from %d to %d: %v", id, id.from, to, err)
	}
}
