package redstalk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand"
	"net"
	"sync"
	"time"
)

// Producer puts jobs into one tube over a connection of its own, opened at its
// first put and opened again after a failure. A put with a key (PutWith with a
// Key, or any put with Idempotent) whose connection fails, or whose reply does not
// come within ReplyTimeout, is sent again with the same key on a new connection:
// the server stores a key's job once and answers a repeat with the first job's id,
// so the put returns that id whether or not the lost attempt had stored it. A put
// without a key is sent once; if its connection fails before the reply, it returns
// the error (ErrClosed) and the job may or may not exist.
//
// A Producer is safe for concurrent use: its puts are pipelined on its one
// connection. Set its fields before the first put and do not copy it after. The
// zero value of each option means its default.
type Producer struct {
	Addr      string // host:port of redstalk
	AuthToken string // if set, sent with auth on each new connection
	Tube      string // the tube of every put; default "default"

	// Idempotent makes every put carry a key: a random one (128 bits, in hex) for
	// Put, and for a PutWith without a Key. Such puts are retried as keyed ones.
	Idempotent bool

	MaxAttempts  int           // sends of one keyed put, the first included; default 10
	BackoffBase  time.Duration // wait before the first resend, doubled per resend (jittered); default 100ms
	BackoffMax   time.Duration // wait before a resend, at most; default 5s
	ReplyTimeout time.Duration // how long one attempt, connecting included, waits for its reply (then the connection is closed); default 10s

	mu       sync.Mutex // held while connecting: puts that saw one failure share one new connection
	c        *Conn
	isClosed bool
}

// errProducerClosed ends the puts of a closed Producer, retries included.
var errProducerClosed = fmt.Errorf("%w by Producer.Close", ErrClosed)

// Put puts a job into the Producer's tube, as Conn.Put does, and returns its id.
// With Idempotent it is a PutWith with a random key, and retried.
func (p *Producer) Put(ctx context.Context, body []byte, pri uint32, delay, ttr time.Duration) (uint64, error) {
	if p.Idempotent {
		id, _, err := p.PutWith(ctx, body, pri, delay, ttr, PutOptions{})
		return id, err
	}
	var id uint64
	err := p.send(ctx, 1, func(ctx context.Context, c *Conn) (err error) {
		id, err = c.Put(ctx, body, pri, delay, ttr)
		return err
	})
	return id, err
}

// PutWith puts a job into the Producer's tube, as Conn.PutWith does. With a Key
// (or Idempotent) it is sent again, up to MaxAttempts times in all, while its
// connection fails before the reply; the id returned is the job's, and duplicate
// tells that an earlier put of the key (an attempt that was lost, or another put)
// had stored it. ctx bounds the whole, retries included.
func (p *Producer) PutWith(ctx context.Context, body []byte, pri uint32, delay, ttr time.Duration, opts PutOptions) (id uint64, duplicate bool, err error) {
	if opts.Key == "" && p.Idempotent {
		if opts.Key, err = randomKey(); err != nil {
			return 0, false, err
		}
	}
	attempts := 1
	if opts.Key != "" {
		attempts = orDefault(p.MaxAttempts, 10)
	}
	err = p.send(ctx, attempts, func(ctx context.Context, c *Conn) (err error) {
		id, duplicate, err = c.PutWith(ctx, body, pri, delay, ttr, opts)
		return err
	})
	return id, duplicate, err
}

// Close closes the Producer's connection. Puts waiting for a reply fail with
// ErrClosed, and later puts too.
func (p *Producer) Close() error {
	p.mu.Lock()
	c := p.c
	p.c, p.isClosed = nil, true
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return nil
}

// randomKey is a put-with key no other put will have: 128 random bits in hex.
func randomKey() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("redstalk: a random put-with key: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// send runs put up to attempts times: again, after a backoff, as long as its
// outcome is unknown (the connection failed or the reply was late).
func (p *Producer) send(ctx context.Context, attempts int, put func(context.Context, *Conn) error) error {
	var rnd *mathrand.Rand
	for attempt := 1; ; attempt++ {
		err := p.attempt(ctx, put)
		if err == nil || attempt >= attempts || !outcomeUnknown(ctx, err) {
			return err
		}
		if rnd == nil { // only a retry needs one; seeded apart from other producers'
			rnd = mathrand.New(mathrand.NewSource(time.Now().UnixNano()))
		}
		wait := jittered(uint64(attempt-1), orDefault(p.BackoffBase, 100*time.Millisecond),
			orDefault(p.BackoffMax, 5*time.Second), rnd.Int63n)
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return err
		}
	}
}

// attempt runs put once within ReplyTimeout, connecting first if need be. A
// connection that failed, or whose reply came too late, is closed by then (see
// Conn), so the next attempt opens a new one.
func (p *Producer) attempt(ctx context.Context, put func(context.Context, *Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, orDefault(p.ReplyTimeout, 10*time.Second))
	defer cancel()
	c, err := p.conn(ctx)
	if err != nil {
		return err
	}
	return put(ctx, c)
}

// outcomeUnknown tells whether err leaves it unknown whether the server ran the
// command, while ctx still allows another attempt: the connection failed (or
// could not be opened), or the attempt's ReplyTimeout passed.
func outcomeUnknown(ctx context.Context, err error) bool {
	if err == nil || errors.Is(err, errProducerClosed) || ctx.Err() != nil {
		return false
	}
	var netErr net.Error
	return errors.Is(err, ErrClosed) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr)
}

// conn is the Producer's open connection, or a new one with auth and use done.
func (p *Producer) conn(ctx context.Context) (*Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isClosed {
		return nil, errProducerClosed
	}
	if p.c != nil && !p.c.closed() {
		return p.c, nil
	}
	c, err := DialContext(ctx, p.Addr)
	if err != nil {
		return nil, err
	}
	if err := p.setUp(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	p.c = c
	return c, nil
}

func (p *Producer) setUp(ctx context.Context, c *Conn) error {
	if p.AuthToken != "" {
		if err := c.Auth(ctx, p.AuthToken); err != nil {
			return err
		}
	}
	if p.Tube != "" && p.Tube != "default" {
		return c.Use(ctx, p.Tube)
	}
	return nil
}
