package redstalk

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedServer is a scripted redstalk on a loopback port: it hands its nth
// connection (from 1) to script and closes it when script returns. It records
// every request it reads.
type scriptedServer struct {
	addr string

	mu       sync.Mutex
	conns    int
	requests []string
}

type fakeConn struct {
	s  *scriptedServer
	nc net.Conn
	br *bufio.Reader
}

func startScripted(t *testing.T, script func(n int, fc *fakeConn)) *scriptedServer {
	t.Helper()
	l := must(net.Listen("tcp", "127.0.0.1:0"))(t)
	s := &scriptedServer{addr: l.Addr().String()}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			n := s.conns
			s.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(10 * time.Second)) // a stuck test fails instead of hanging
				script(n, &fakeConn{s: s, nc: nc, br: bufio.NewReader(nc)})
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); wg.Wait() })
	return s
}

// read reads and records one request: a command line, with its body for a put.
// It returns "" once the client has gone.
func (fc *fakeConn) read() string {
	req, err := fc.br.ReadString('\n')
	if err != nil {
		return ""
	}
	if f := strings.Fields(req); f[0] == "put" || f[0] == "put-with" {
		n, _ := strconv.Atoi(f[len(f)-1])
		body := make([]byte, n+2)
		if _, err := io.ReadFull(fc.br, body); err != nil {
			return ""
		}
		req += string(body)
	}
	fc.s.mu.Lock()
	fc.s.requests = append(fc.s.requests, req)
	fc.s.mu.Unlock()
	return req
}

// answer reads one request and sends reply (all of it: "\r\n" included).
func (fc *fakeConn) answer(reply string) {
	fc.read()
	io.WriteString(fc.nc, reply)
}

// got is how many connections the server accepted and the requests it read.
func (s *scriptedServer) got() (conns int, requests []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns, append([]string(nil), s.requests...)
}

func wantRequests(t *testing.T, s *scriptedServer, conns int, requests ...string) {
	t.Helper()
	n, got := s.got()
	if n != conns || strings.Join(got, "|") != strings.Join(requests, "|") {
		t.Fatalf("server got %d connections, requests %q; want %d, %q", n, got, conns, requests)
	}
}

// fakeServer answers each request with the next canned reply, then holds the
// connection until the client closes it, and returns its address.
func fakeServer(t *testing.T, replies ...string) string {
	t.Helper()
	return startScripted(t, func(_ int, fc *fakeConn) {
		for _, reply := range replies {
			fc.answer(reply)
		}
		fc.read()
	}).addr
}
