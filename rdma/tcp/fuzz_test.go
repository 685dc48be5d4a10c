package tcp

import (
	"testing"

	"github.com/fibermpi/fibermpi/packet"
)

// FuzzDecodeHead feeds the frame decoder arbitrary streams: it must never
// panic, must accept only heads of known kinds with sane lengths, and
// every frame it accepts must re-encode to the same bytes.
func FuzzDecodeHead(f *testing.F) {
	pk := &packet.Packet{Context: 1, Tag: 2, Kind: packet.KindEager}
	f.Add(appendPacketHead(nil, 3, pk))
	f.Add(appendBind(nil, fBind, 7, 9))
	f.Add(appendAck(nil, 7, stBounds))
	f.Add(appendAccess(nil, fPut, 1, 2, 3, 4, 5, 6, 7))
	f.Add(appendAccess(nil, fGetReq, 1, 2, 3, 4, 5, 6, 7))
	f.Add(appendGetResp(nil, 1, stOK, 9))
	f.Add([]byte{fPing, fPing, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		const maxPayload = 1024
		for len(b) > 0 {
			fr, size, need, err := decodeHead(b, maxPayload)
			if err != nil {
				return
			}
			if need > 0 {
				if need <= len(b) || need != headSize(b[0]) {
					t.Fatalf("need %d with %d bytes of kind %d", need, len(b), b[0])
				}
				return
			}
			if size != headSize(fr.kind) || size > len(b) {
				t.Fatalf("size %d for kind %d", size, fr.kind)
			}
			if fr.kind == fPacket && fr.n > maxPayload {
				t.Fatalf("accepted a packet of %d bytes", fr.n)
			}
			var again []byte
			switch fr.kind {
			case fPacket:
				p, err := packet.New(packet.Config{Workers: 1, PayloadSize: maxPayload})
				if err != nil {
					t.Fatal(err)
				}
				q := p.Get(0)
				if err := q.DecodeHeader(fr.hdr); err != nil {
					t.Fatalf("an accepted header does not decode: %v", err)
				}
				again = appendPacketHead(nil, fr.addr, q)
				again = append(again[:5+50], b[5+50:size]...) // bytes the header ignores
				p.Put(0, q)
			case fBind, fUnbind:
				again = appendBind(nil, fr.kind, fr.seq, fr.addr)
			case fAck:
				again = appendAck(nil, fr.seq, fr.status)
			case fPut, fGetReq:
				again = appendAccess(nil, fr.kind, fr.seq, fr.addr, fr.key, fr.tag, fr.rlen, fr.off, fr.n)
			case fGetResp:
				again = appendGetResp(nil, fr.seq, fr.status, fr.n)
			case fPing:
				again = []byte{fPing}
			}
			if string(again) != string(b[:size]) {
				t.Fatalf("kind %d: re-encoded %x, read %x", fr.kind, again, b[:size])
			}
			skip := uint64(size) + fr.payloadLen()
			if skip >= uint64(len(b)) {
				return
			}
			b = b[skip:]
		}
	})
}
