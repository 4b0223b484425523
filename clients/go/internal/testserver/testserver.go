// Package testserver starts the processes the tests of this module run against: a
// private redis-server and redstalk sidecars on free loopback ports. Every process
// is stopped by its PID; on Linux it is also killed if the test binary dies first.
package testserver

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const startTimeout = 30 * time.Second

// Redis is a private redis-server without persistence.
type Redis struct {
	Addr string
	cmd  *exec.Cmd
	exit chan struct{}
}

// StartRedis starts a redis-server on a free loopback port.
func StartRedis() (*Redis, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ { // the free port may be taken before redis binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no")
		cmd.SysProcAttr = dieWithParent(syscall.SIGKILL)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, exit: make(chan struct{})}
		go func() { cmd.Wait(); close(r.exit) }()
		if lastErr = r.waitReady(); lastErr == nil {
			return r, nil
		}
		r.Stop()
		lastErr = fmt.Errorf("%v\n%s", lastErr, out.String())
	}
	return nil, lastErr
}

func (r *Redis) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-r.exit:
			return errors.New("redis-server exited")
		default:
		}
		if reply, err := r.Do("PING"); err == nil && reply == "+PONG" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("redis-server did not answer PING")
}

// URL is the redis:// URL for redstalk's --redis.
func (r *Redis) URL() string { return "redis://" + r.Addr }

// Do sends one command and returns the first line of its reply (e.g. "+OK").
func (r *Redis) Do(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// Stop kills the redis-server and waits for it.
func (r *Redis) Stop() {
	r.cmd.Process.Kill()
	<-r.exit
}

// Sidecar is a redstalk process.
type Sidecar struct {
	Addr   string // host:port it listens on
	Prefix string
	cmd    *exec.Cmd
	exit   chan struct{}

	mu  sync.Mutex
	out bytes.Buffer // its stdout and stderr
}

// UniquePrefix is a Redis key prefix no other sidecar uses: a fresh, empty server.
func UniquePrefix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "go" + hex.EncodeToString(b)
}

// StartSidecar starts redstalk on a free loopback port against redisURL with the
// given prefix (and extra flags), and waits until it listens.
//
// The command is $REDSTALK_CMD (split on spaces) if set, else
// `node --import tsx src/cli.ts` in the repository root.
func StartSidecar(redisURL, prefix string, extra ...string) (*Sidecar, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	argv := []string{"node", "--import", "tsx", filepath.Join(root, "src", "cli.ts")}
	if env := strings.Fields(os.Getenv("REDSTALK_CMD")); len(env) > 0 {
		argv = env
	}
	argv = append(argv, "-l", "127.0.0.1", "-p", "0", "--redis", redisURL, "--prefix", prefix)
	argv = append(argv, extra...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = root
	cmd.SysProcAttr = dieWithParent(syscall.SIGTERM)
	s := &Sidecar{Prefix: prefix, cmd: cmd, exit: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &lockedWriter{s}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.out.Write(sc.Bytes())
			s.out.WriteByte('\n')
			s.mu.Unlock()
			var line struct{ Msg, Listen string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "redstalk listening" {
				listening <- line.Listen
			}
		}
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(s.exit)
	}()
	select {
	case s.Addr = <-listening:
		return s, nil
	case <-s.exit:
		return nil, fmt.Errorf("redstalk exited before listening (%v): %v\n%s", cmd.ProcessState, argv, s.Output())
	case <-time.After(startTimeout):
		s.Stop()
		return nil, fmt.Errorf("redstalk did not listen within %v: %v\n%s", startTimeout, argv, s.Output())
	}
}

// Output is what the sidecar printed so far.
func (s *Sidecar) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Signal sends sig to the sidecar (SIGUSR1: drain mode).
func (s *Sidecar) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// Stop sends SIGTERM and waits for the exit, killing the sidecar if it takes
// longer than 10 s.
func (s *Sidecar) Stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exit:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.exit
	}
}

type lockedWriter struct{ s *Sidecar }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.out.Write(p)
}

// RepoRoot is the redstalk checkout: two levels above this module's go.mod, found
// from the working directory (go test runs in the package's folder).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(mod, []byte("module github.com/redstalk/redstalk/clients/go\n")) {
			return filepath.Clean(filepath.Join(dir, "..", "..")), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testserver: not inside the clients/go module")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
