package redstalk

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstalk/redstalk/clients/go/internal/testserver"
)

// The conformance transcripts of protocol/transcripts (format: its README.md),
// each replayed on a fresh server over one new connection, every reply read by
// readReply, the reader of the typed API.

type scenario struct {
	file, name string
	steps      []step
}

type step struct {
	send    []byte
	expect  [][][]byte // per reply: its literal pieces, with {*} between them
	sources []string   // the S: lines, for messages
}

const (
	replyTimeout     = 3 * time.Second
	replaysAtOnce    = 6 // sidecar start-ups are CPU-bound; more only queue
	transcriptFolder = "protocol/transcripts"
)

func TestTranscripts(t *testing.T) {
	t.Parallel()
	root, err := testserver.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, transcriptFolder, "*.txt"))
	if len(files) == 0 {
		t.Fatalf("no transcripts in %s", filepath.Join(root, transcriptFolder))
	}
	var scenarios []scenario
	for _, f := range files {
		sc, err := parseTranscript(f)
		if err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, sc...)
	}

	// Replay concurrently, then report one subtest per scenario.
	failures := make([]error, len(scenarios))
	sem := make(chan struct{}, replaysAtOnce)
	var wg sync.WaitGroup
	for i := range scenarios {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			failures[i] = replayOnFreshServer(scenarios[i])
		}(i)
	}
	wg.Wait()
	for i, sc := range scenarios {
		t.Run(sc.file+"/"+sc.name, func(t *testing.T) {
			if failures[i] != nil {
				t.Fatal(failures[i])
			}
		})
	}
}

func replayOnFreshServer(sc scenario) error {
	s, err := testserver.StartSidecar(redis.URL(), testserver.UniquePrefix())
	if err != nil {
		return err
	}
	defer s.Stop()
	return replay(s.Addr, sc)
}

func replay(addr string, sc scenario) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	for _, st := range sc.steps {
		if _, err := nc.Write(st.send); err != nil {
			return fmt.Errorf("sending %q: %v", st.send, err)
		}
		for i, want := range st.expect {
			nc.SetReadDeadline(time.Now().Add(replyTimeout))
			var raw bytes.Buffer
			_, err := readReply(br, &raw)
			if err == nil && !matchPieces(want, raw.Bytes()) {
				err = fmt.Errorf("differs")
			}
			if err != nil {
				return fmt.Errorf("after C: %s\nexpected S: %s\nactual:     %s\n(%v)",
					escape(st.send), st.sources[i], escape(raw.Bytes()), err)
			}
		}
	}
	return nil
}

func parseTranscript(path string) ([]scenario, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	file := filepath.Base(path)
	var out []scenario
	for n, line := range strings.Split(string(text), "\n") {
		where := fmt.Sprintf("%s:%d", file, n+1)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "=== "):
			out = append(out, scenario{file: file, name: line[4:]})
		case strings.HasPrefix(line, "C: ") && len(out) > 0:
			b, err := unescape(line[3:])
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
			sc := &out[len(out)-1]
			sc.steps = append(sc.steps, step{send: b})
		case strings.HasPrefix(line, "S: ") && len(out) > 0 && len(out[len(out)-1].steps) > 0:
			var pieces [][]byte
			for _, p := range strings.Split(line[3:], "{*}") {
				b, err := unescape(p)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", where, err)
				}
				pieces = append(pieces, b)
			}
			sc := &out[len(out)-1]
			st := &sc.steps[len(sc.steps)-1]
			st.expect = append(st.expect, pieces)
			st.sources = append(st.sources, line[3:])
		default:
			return nil, fmt.Errorf("%s: unexpected line %.60q", where, line)
		}
	}
	return out, nil
}

// unescape decodes \r \n \t \0 \\ \xNN; every other character is one latin1 byte.
func unescape(s string) ([]byte, error) {
	var b []byte
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r > 0xff {
			return nil, fmt.Errorf("character %q is not latin1", r)
		}
		if r != '\\' {
			b = append(b, byte(r))
			continue
		}
		if i+1 >= len(rs) {
			return nil, fmt.Errorf("%q ends in a lone backslash", s)
		}
		i++
		switch rs[i] {
		case 'r':
			b = append(b, '\r')
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case '0':
			b = append(b, 0)
		case '\\':
			b = append(b, '\\')
		case 'x':
			if i+2 >= len(rs) {
				return nil, fmt.Errorf("short \\x escape in %q", s)
			}
			v, err := strconv.ParseUint(string(rs[i+1:i+3]), 16, 8)
			if err != nil {
				return nil, fmt.Errorf("bad \\x escape in %q", s)
			}
			b = append(b, byte(v))
			i += 2
		default:
			return nil, fmt.Errorf("unknown escape \\%c in %q", rs[i], s)
		}
	}
	return b, nil
}

// matchPieces tells whether got is the pieces joined by runs of bytes other than
// CR and LF (the {*} of a transcript).
func matchPieces(pieces [][]byte, got []byte) bool {
	if !bytes.HasPrefix(got, pieces[0]) {
		return false
	}
	got = got[len(pieces[0]):]
	if len(pieces) == 1 {
		return len(got) == 0
	}
	for i := 0; i <= len(got); i++ {
		if matchPieces(pieces[1:], got[i:]) {
			return true
		}
		if i < len(got) && (got[i] == '\r' || got[i] == '\n') {
			return false
		}
	}
	return false
}

// escape writes bytes the way transcripts do, for messages.
func escape(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		switch {
		case c == '\r':
			s.WriteString(`\r`)
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\t':
			s.WriteString(`\t`)
		case c == 0:
			s.WriteString(`\0`)
		case c == '\\':
			s.WriteString(`\\`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&s, `\x%02x`, c)
		default:
			s.WriteByte(c)
		}
	}
	return s.String()
}

func TestTranscriptHelpers(t *testing.T) {
	b, err := unescape(`a\r\n\t\0\\\x7f\xffé`)
	if err != nil || string(b) != "a\r\n\t\x00\\\x7f\xff\xe9" {
		t.Fatalf("unescape = %q, %v", b, err)
	}
	for _, bad := range []string{`\q`, `\x1`, `\xzz`, `x\`} {
		if _, err := unescape(bad); err == nil {
			t.Errorf("unescape(%q) accepted", bad)
		}
	}
	p := func(s string) [][]byte {
		var out [][]byte
		for _, x := range strings.Split(s, "{*}") {
			out = append(out, []byte(x))
		}
		return out
	}
	for _, c := range []struct {
		pattern, got string
		ok           bool
	}{
		{"OK {*}\r\n", "OK 12\r\n", true},
		{"OK {*}\r\n", "OK \r\n", true},
		{"a: {*}\nb: {*}\n", "a: 1\nb: 2\n", true},
		{"a: {*}\n", "a: 1\nb\n", false},
		{"{*}x", "ab\nx", false},
		{"x", "xy", false},
	} {
		if matchPieces(p(c.pattern), []byte(c.got)) != c.ok {
			t.Errorf("match(%q, %q) != %v", c.pattern, c.got, c.ok)
		}
	}
}
