package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The PMI wire protocols, as MPICH's pmi-1.1 and PMI-2 documents specify
// them and Hydra and Slurm speak them.
//
// PMI-1 is line based: "cmd=<name> key=value key=value\n", fields
// separated by spaces, a value running to the next space. PMI-2 frames a
// command as a 6-character decimal length (left aligned, space padded)
// followed by that many bytes of "cmd=<name>;key=value;key=value;". Both
// carry only printable text without the separators; fibermpi's records are
// hex-encoded (see pmiValue), so nothing it sends needs escaping.

// pmiMaxLine bounds one PMI-1 line or PMI-2 frame read from the server.
const pmiMaxLine = 64 << 10

// errPMIProtocol is wrapped by malformed answers of the PMI server.
var errPMIProtocol = errors.New("PMI protocol error")

// pmiMsg is one command or answer: its fields by key, "cmd" included.
type pmiMsg map[string]string

// cmd is the command's name.
func (m pmiMsg) cmd() string { return m["cmd"] }

// formatPMI1 encodes a PMI-1 command line: cmd, then the key-value pairs
// in order.
func formatPMI1(cmd string, kv ...string) []byte {
	b := append([]byte("cmd="), cmd...)
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, ' ')
		b = append(b, kv[i]...)
		b = append(b, '=')
		b = append(b, kv[i+1]...)
	}
	return append(b, '\n')
}

// parsePMI1 decodes one PMI-1 line (without its newline). A field without
// "=" is a protocol error; a value keeps any "=" after the first.
func parsePMI1(line string) (pmiMsg, error) {
	m := pmiMsg{}
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: field %q of PMI-1 line %q", errPMIProtocol, f, line)
		}
		m[k] = v
	}
	if m.cmd() == "" {
		return nil, fmt.Errorf("%w: PMI-1 line %q has no cmd", errPMIProtocol, line)
	}
	return m, nil
}

// readPMI1 reads one PMI-1 line.
func readPMI1(r *bufio.Reader) (pmiMsg, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) && len(line) <= pmiMaxLine {
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: a PMI-1 line longer than %d bytes", errPMIProtocol, pmiMaxLine)
		}
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return parsePMI1(strings.TrimRight(string(line), "\r\n"))
}

// formatPMI2 encodes a PMI-2 frame. A ";" in a value is doubled, as the
// PMI-2 document says; fibermpi's own values never hold one.
func formatPMI2(cmd string, kv ...string) []byte {
	body := append([]byte("cmd="), cmd...)
	body = append(body, ';')
	for i := 0; i+1 < len(kv); i += 2 {
		body = append(body, kv[i]...)
		body = append(body, '=')
		body = append(body, strings.ReplaceAll(kv[i+1], ";", ";;")...)
		body = append(body, ';')
	}
	return append(fmt.Appendf(nil, "%-6d", len(body)), body...)
}

// parsePMI2 decodes the body of a PMI-2 frame: "k=v;" pairs, ";;" standing
// for a ";" in a value.
func parsePMI2(body string) (pmiMsg, error) {
	m := pmiMsg{}
	for len(body) > 0 {
		k, rest, ok := strings.Cut(body, "=")
		if !ok || k == "" || strings.Contains(k, ";") {
			return nil, fmt.Errorf("%w: PMI-2 frame %q: a field without key", errPMIProtocol, body)
		}
		var v strings.Builder
		i := 0
		for {
			j := strings.IndexByte(rest[i:], ';')
			if j < 0 { // the last field may lack its ";"
				v.WriteString(rest[i:])
				i = len(rest)
				break
			}
			v.WriteString(rest[i : i+j])
			i += j + 1
			if i < len(rest) && rest[i] == ';' {
				v.WriteByte(';')
				i++
				continue
			}
			break
		}
		m[k] = v.String()
		body = rest[i:]
	}
	if m.cmd() == "" {
		return nil, fmt.Errorf("%w: PMI-2 frame without cmd", errPMIProtocol)
	}
	return m, nil
}

// readPMI2 reads one PMI-2 frame.
func readPMI2(r *bufio.Reader) (pmiMsg, error) {
	var hdr [6]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n < 0 || n > pmiMaxLine {
		return nil, fmt.Errorf("%w: PMI-2 length %q", errPMIProtocol, hdr[:])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return parsePMI2(string(body))
}
