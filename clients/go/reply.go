package redstalk

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxBodyBytes bounds a reply body: redstalk's -z tops out at 1 GiB, so a larger
// length can only come from a corrupt stream.
const maxBodyBytes = 1 << 30

// reply is one whole server reply: its line and, for the replies that carry one,
// the job, the YAML body, or the jobs of RESERVED-MANY.
type reply struct {
	line string // without "\r\n"
	word string
	args []string
	job  Job    // RESERVED <id> <bytes>, FOUND <id> <bytes>
	body []byte // OK <bytes>
	jobs []Job  // RESERVED-MANY <n>
}

// readReply reads one reply. Which replies carry a body is known from the reply
// alone, so the reader needs no knowledge of the command that was sent. When raw
// is not nil every byte read is appended to it (the transcript tests compare them).
func readReply(br *bufio.Reader, raw *bytes.Buffer) (reply, error) {
	line, err := readLine(br, raw)
	if err != nil {
		return reply{}, err
	}
	fields := strings.Split(line, " ")
	rp := reply{line: line, word: fields[0], args: fields[1:]}
	switch {
	case (rp.word == "RESERVED" || rp.word == "FOUND") && len(rp.args) == 2:
		id, err := parseNumber(rp.args[0], line)
		if err != nil {
			return rp, err
		}
		body, err := readBody(br, rp.args[1], line, raw)
		if err != nil {
			return rp, err
		}
		rp.job = Job{ID: id, Body: body}
	case rp.word == "OK" && len(rp.args) == 1:
		if rp.body, err = readBody(br, rp.args[0], line, raw); err != nil {
			return rp, err
		}
	case rp.word == "RESERVED-MANY" && len(rp.args) == 1:
		n, err := parseNumber(rp.args[0], line)
		if err != nil {
			return rp, err
		}
		for i := uint64(0); i < n; i++ {
			block, err := readReply(br, raw)
			if err != nil {
				return rp, err
			}
			if block.word != "RESERVED" || len(block.args) != 2 {
				return rp, fmt.Errorf("redstalk: malformed reply: %q inside %q", block.line, line)
			}
			rp.jobs = append(rp.jobs, block.job)
		}
	}
	return rp, nil
}

func readLine(br *bufio.Reader, raw *bytes.Buffer) (string, error) {
	b, err := br.ReadSlice('\n')
	if raw != nil {
		raw.Write(b)
	}
	if err == bufio.ErrBufferFull {
		return "", fmt.Errorf("redstalk: malformed reply: line longer than %d bytes", br.Size())
	}
	if err != nil {
		return "", err
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return "", fmt.Errorf("redstalk: malformed reply: %q does not end in \\r\\n", b)
	}
	return string(b[:len(b)-2]), nil
}

func readBody(br *bufio.Reader, size, line string, raw *bytes.Buffer) ([]byte, error) {
	n, err := parseNumber(size, line)
	if err != nil {
		return nil, err
	}
	if n > maxBodyBytes {
		return nil, fmt.Errorf("redstalk: malformed reply: body of %d bytes in %q", n, line)
	}
	buf := make([]byte, n+2)
	got, err := io.ReadFull(br, buf)
	if raw != nil {
		raw.Write(buf[:got])
	}
	if err != nil {
		return nil, err
	}
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return nil, fmt.Errorf("redstalk: malformed reply: body of %q not followed by \\r\\n", line)
	}
	return buf[:n:n], nil
}

func parseNumber(s, line string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redstalk: malformed reply: %q", line)
	}
	return n, nil
}
