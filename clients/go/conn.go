package redstalk

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// DefaultDialTimeout bounds the TCP connect of Dial.
const DefaultDialTimeout = 10 * time.Second

// Conn is one connection to redstalk (or to any beanstalkd).
//
// A Conn is safe for concurrent use and pipelines: each call writes its command at
// once and waits for its own reply, and the server answers commands in the order
// they were written, so calls from many goroutines are in flight together on one
// socket. The connection's state (the tube used by Put, the watched tubes, the jobs
// it has reserved) is shared by all of them.
//
// Every call takes a context. A call whose context ends before its reply arrives
// returns ctx.Err() and closes the connection: the protocol cannot withdraw a
// command, and a reply nobody reads could be a job reserved for nobody. Closing
// hands every job the connection had reserved back to ready.
type Conn struct {
	nc net.Conn
	br *bufio.Reader

	wmu sync.Mutex // one writer at a time, so pending stays in write order

	mu      sync.Mutex
	pending []*call // calls awaiting a reply, oldest first
	err     error   // why the connection closed; nil while open
}

type call struct {
	done chan result
}

type result struct {
	rp  reply
	err error
}

// Dial connects to a redstalk at addr ("host:port") within DefaultDialTimeout.
func Dial(addr string) (*Conn, error) {
	return DialTimeout(addr, DefaultDialTimeout)
}

// DialTimeout connects to a redstalk at addr ("host:port") within timeout.
func DialTimeout(addr string, timeout time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return NewConn(nc), nil
}

// DialContext connects to a redstalk at addr ("host:port") within
// DefaultDialTimeout, or until ctx ends.
func DialContext(ctx context.Context, addr string) (*Conn, error) {
	nc, err := (&net.Dialer{Timeout: DefaultDialTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return NewConn(nc), nil
}

// NewConn uses an established connection (e.g. a Unix socket for `-l unix:PATH`).
func NewConn(nc net.Conn) *Conn {
	c := &Conn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	go c.readLoop()
	return c
}

// Close closes the connection. Calls still waiting fail with ErrClosed.
func (c *Conn) Close() error {
	c.fail(fmt.Errorf("%w by Close", ErrClosed))
	return nil
}

// closed tells whether the connection has failed or been closed.
func (c *Conn) closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// readLoop hands each reply to the oldest waiting call.
func (c *Conn) readLoop() {
	for {
		rp, err := readReply(c.br, nil)
		if err != nil {
			c.fail(fmt.Errorf("%w: %v", ErrClosed, err))
			return
		}
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			c.fail(fmt.Errorf("%w: reply %q to no command", ErrClosed, rp.line))
			return
		}
		cl := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		c.mu.Unlock()
		cl.done <- result{rp: rp}
	}
}

// fail closes the connection for good and fails every waiting call with err (the
// first reason wins).
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	waiting := c.pending
	c.pending = nil
	err = c.err
	c.mu.Unlock()
	c.nc.Close()
	for _, cl := range waiting {
		cl.done <- result{err: err}
	}
}

// send writes one request (a command line with its "\r\n", and a put's body) and
// queues a call for its reply.
func (c *Conn) send(ctx context.Context, req []byte) (*call, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	cl := &call{done: make(chan result, 1)}
	c.pending = append(c.pending, cl)
	c.mu.Unlock()
	deadline, _ := ctx.Deadline()
	c.nc.SetWriteDeadline(deadline)
	if _, err := c.nc.Write(req); err != nil {
		c.fail(fmt.Errorf("%w: %v", ErrClosed, err))
	}
	return cl, nil
}

// roundTrip sends a request and waits for its reply.
func (c *Conn) roundTrip(ctx context.Context, req []byte) (reply, error) {
	cl, err := c.send(ctx, req)
	if err != nil {
		return reply{}, err
	}
	select {
	case res := <-cl.done:
		return res.rp, res.err
	case <-ctx.Done():
		select {
		case res := <-cl.done: // the reply won the race: keep the connection
			return res.rp, res.err
		default:
		}
		c.fail(fmt.Errorf("%w: a call's context ended before its reply: %v", ErrClosed, ctx.Err()))
		return reply{}, ctx.Err()
	}
}

// expect runs a command whose success reply is the word want; any other reply
// becomes its error.
func (c *Conn) expect(ctx context.Context, req []byte, want string) (reply, error) {
	rp, err := c.roundTrip(ctx, req)
	if err != nil {
		return rp, err
	}
	if rp.word != want {
		return rp, errorOf(rp)
	}
	return rp, nil
}
