package redstalk

import (
	"errors"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// newProducer is a Producer for a test, with short waits between attempts.
func newProducer(t *testing.T, p *Producer) *Producer {
	if p.BackoffBase == 0 {
		p.BackoffBase = time.Millisecond
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// The server stored the job but the connection closed before the reply: the
// producer sends the same put-with again on a new connection, using the tube
// first, and returns the id of the DUPLICATE reply.
func TestProducerResendsAPutWhoseReplyWasLost(t *testing.T) {
	t.Parallel()
	s := startScripted(t, func(n int, fc *fakeConn) {
		fc.answer("USING jobs\r\n")
		if n == 1 {
			fc.read() // and hang up without a reply
			return
		}
		fc.answer("DUPLICATE 7\r\n")
	})
	p := newProducer(t, &Producer{Addr: s.addr, Tube: "jobs"})
	id, duplicate, err := p.PutWith(testCtx(t), []byte("hello"), 1, 0, time.Minute, PutOptions{Key: "order-1"})
	if id != 7 || !duplicate || err != nil {
		t.Fatalf("PutWith = %d, %v, %v; want 7, true, nil", id, duplicate, err)
	}
	put := "put-with order-1 0 delete 1 0 60 5\r\nhello\r\n"
	wantRequests(t, s, 2, "use jobs\r\n", put, "use jobs\r\n", put)
}

// A reply that does not come within ReplyTimeout counts as lost.
func TestProducerResendsAPutWhoseReplyIsLate(t *testing.T) {
	t.Parallel()
	s := startScripted(t, func(n int, fc *fakeConn) {
		if n == 1 {
			fc.read()
			fc.read() // no reply: wait until the client hangs up
			return
		}
		fc.answer("INSERTED 1\r\n")
	})
	p := newProducer(t, &Producer{Addr: s.addr, ReplyTimeout: 200 * time.Millisecond})
	id, duplicate, err := p.PutWith(testCtx(t), []byte("x"), 0, 0, time.Minute, PutOptions{Key: "k"})
	if id != 1 || duplicate || err != nil {
		t.Fatalf("PutWith = %d, %v, %v; want 1, false, nil", id, duplicate, err)
	}
	put := "put-with k 0 delete 0 0 60 1\r\nx\r\n"
	wantRequests(t, s, 2, put, put)
}

// Puts in flight together on a connection that fails are all sent again, on one
// new connection.
func TestProducerConcurrentPutsShareOneNewConnection(t *testing.T) {
	t.Parallel()
	const puts = 5
	s := startScripted(t, func(n int, fc *fakeConn) {
		for i := 0; i < puts; i++ {
			req := fc.read()
			if n > 1 {
				io.WriteString(fc.nc, "DUPLICATE "+strings.Fields(req)[1]+"\r\n") // the key is the id
			}
		}
		if n > 1 {
			fc.read()
		}
	})
	ctx, p := testCtx(t), newProducer(t, &Producer{Addr: s.addr})
	var wg sync.WaitGroup
	for i := 1; i <= puts; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id, duplicate, err := p.PutWith(ctx, nil, 0, 0, time.Minute, PutOptions{Key: strconv.Itoa(i)})
			if id != uint64(i) || !duplicate || err != nil {
				t.Errorf("PutWith %d = %d, %v, %v", i, id, duplicate, err)
			}
		}(i)
	}
	wg.Wait()
	if conns, reqs := s.got(); conns != 2 || len(reqs) != 2*puts {
		t.Fatalf("%d connections, %d requests; want 2, %d", conns, len(reqs), 2*puts)
	}
}

// Idempotent puts carry a random key of their own, the same on a resend.
func TestProducerIdempotentPut(t *testing.T) {
	t.Parallel()
	s := startScripted(t, func(n int, fc *fakeConn) {
		if n == 1 {
			fc.read()
			return
		}
		fc.answer("INSERTED 3\r\n")
		fc.answer("INSERTED 4\r\n")
	})
	ctx, p := testCtx(t), newProducer(t, &Producer{Addr: s.addr, Idempotent: true})
	wantEq(t, "first put", must(p.Put(ctx, []byte("a"), 0, 0, time.Minute))(t), uint64(3))
	wantEq(t, "second put", must(p.Put(ctx, []byte("a"), 0, 0, time.Minute))(t), uint64(4))
	_, reqs := s.got()
	keyed := regexp.MustCompile(`^put-with ([0-9a-f]{32}) 0 delete 0 0 60 1\r\na\r\n$`)
	var keys []string
	for _, r := range reqs {
		m := keyed.FindStringSubmatch(r)
		if m == nil {
			t.Fatalf("request %q is not a put-with with a random key", r)
		}
		keys = append(keys, m[1])
	}
	if len(keys) != 3 || keys[0] != keys[1] || keys[1] == keys[2] {
		t.Fatalf("keys %q: want the first resent, the second new", keys)
	}
}

// A put without a key is never sent twice: its outcome stays unknown, ErrClosed.
// The next put opens a new connection.
func TestProducerDoesNotResendAPutWithoutKey(t *testing.T) {
	t.Parallel()
	s := startScripted(t, func(n int, fc *fakeConn) {
		if n == 1 {
			fc.read()
			return
		}
		fc.answer("INSERTED 2\r\n")
	})
	ctx, p := testCtx(t), newProducer(t, &Producer{Addr: s.addr})
	_, err := p.Put(ctx, []byte("a"), 0, 0, time.Minute)
	wantErr(t, err, ErrClosed)
	_, _, err = p.PutWith(ctx, []byte("a"), 0, 0, time.Minute, PutOptions{Expire: time.Hour})
	mustNil(t, err)
	wantRequests(t, s, 2, "put 0 0 60 1\r\na\r\n", "put-with - 3600 delete 0 0 60 1\r\na\r\n")
}

func TestProducerGivesUp(t *testing.T) {
	t.Parallel()
	t.Run("after MaxAttempts", func(t *testing.T) {
		s := startScripted(t, func(n int, fc *fakeConn) { fc.read() })
		p := newProducer(t, &Producer{Addr: s.addr, MaxAttempts: 3})
		_, _, err := p.PutWith(testCtx(t), nil, 0, 0, time.Minute, PutOptions{Key: "k"})
		wantErr(t, err, ErrClosed)
		put := "put-with k 0 delete 0 0 60 0\r\n\r\n"
		wantRequests(t, s, 3, put, put, put)
	})
	t.Run("on a reply", func(t *testing.T) {
		s := startScripted(t, func(n int, fc *fakeConn) { fc.answer("JOB_TOO_BIG\r\n") })
		p := newProducer(t, &Producer{Addr: s.addr})
		_, _, err := p.PutWith(testCtx(t), []byte("big"), 0, 0, time.Minute, PutOptions{Key: "k"})
		wantErr(t, err, ErrJobTooBig)
		wantRequests(t, s, 1, "put-with k 0 delete 0 0 60 3\r\nbig\r\n")
	})
	t.Run("on Close", func(t *testing.T) {
		s := startScripted(t, func(n int, fc *fakeConn) { fc.read() })
		p := newProducer(t, &Producer{Addr: s.addr})
		mustNil(t, p.Close())
		_, _, err := p.PutWith(testCtx(t), nil, 0, 0, time.Minute, PutOptions{Key: "k"})
		wantErr(t, err, ErrClosed)
		wantRequests(t, s, 0)
	})
	t.Run("when nothing listens", func(t *testing.T) {
		l := must(net.Listen("tcp", "127.0.0.1:0"))(t)
		l.Close()
		p := newProducer(t, &Producer{Addr: l.Addr().String(), MaxAttempts: 2})
		_, _, err := p.PutWith(testCtx(t), nil, 0, 0, time.Minute, PutOptions{Key: "k"})
		var netErr net.Error
		if !errors.As(err, &netErr) {
			t.Fatalf("error %v, want a net.Error", err)
		}
	})
}
