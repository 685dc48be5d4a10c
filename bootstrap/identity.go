package bootstrap

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"sync"
)

// hostIdentity is this node's identity: the host name and the kernel's boot
// id, so that two machines (or two boots) with one name differ.
var hostIdentity = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		host += "/" + strings.TrimSpace(string(b))
	}
	return host
})

// exeIdentity returns what the processes of a job compare to check that they
// run the same program, and the executable's path for messages. The identity
// is the Go build ID from the ELF note (equal for copies of one binary, and
// different for any rebuild that changed it); without one, the file's size
// and modification time.
var exeIdentity = sync.OnceValues(func() (id, exe string) {
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	self := "/proc/self/exe" // the running file, even if exe was replaced since
	if _, err := os.Stat(self); err != nil {
		self = exe
	}
	if bid, err := goBuildID(self); err == nil {
		return "go build ID " + bid, exe
	}
	if st, err := os.Stat(self); err == nil {
		return fmt.Sprintf("file %s, %d bytes, modified %s", exe, st.Size(), st.ModTime().UTC().Format("2006-01-02T15:04:05.000000000Z")), exe
	}
	return "unknown executable " + exe, exe
})

// goBuildID reads the Go build ID note of the ELF file at path: a note named
// "Go" of type 4 in section .note.go.buildid, whose descriptor is the ID.
func goBuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", fmt.Errorf("%s: no Go build ID note", path)
	}
	note, err := s.Data()
	if err != nil {
		return "", err
	}
	_, desc, err := parseGoNote(note, f.ByteOrder)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(desc), nil
}

// parseGoNote checks an ELF note holding the Go build ID and returns the
// descriptor's offset in note and the descriptor.
func parseGoNote(note []byte, bo binary.ByteOrder) (int, []byte, error) {
	const hdr = 12
	if len(note) < hdr+4 {
		return 0, nil, fmt.Errorf("Go build ID note of %d bytes", len(note))
	}
	namesz, descsz, typ := bo.Uint32(note), bo.Uint32(note[4:]), bo.Uint32(note[8:])
	if namesz != 4 || typ != 4 || string(note[hdr:hdr+4]) != "Go\x00\x00" || uint64(descsz) > uint64(len(note)-hdr-4) || descsz == 0 {
		return 0, nil, fmt.Errorf("not a Go build ID note (name size %d, type %d)", namesz, typ)
	}
	return hdr + 4, note[hdr+4 : hdr+4+int(descsz)], nil
}
