package redstalk

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// The requests PutWith and TubeSet write, and how the replies are read, against a
// scripted server.
func TestPutWithAndTubeSetOnTheWire(t *testing.T) {
	t.Parallel()
	yaml := func(doc string) string { return fmt.Sprintf("OK %d\r\n%s\r\n", len(doc), doc) }
	extras := "max-reserved: 5\nreserve-rate: 100\ndedup-window: 3600\njobs-expired: 2\nduplicate-puts: 3\n"
	s := startScripted(t, func(_ int, fc *fakeConn) {
		fc.answer("INSERTED 1\r\n")
		fc.answer("DUPLICATE 1\r\n")
		fc.answer("OK\r\n")
		fc.answer(yaml("---\nname: mail\ncurrent-jobs-ready: 1\n"))
		fc.answer(yaml("---\nname: mail\n" + extras))
		fc.read()
	})
	ctx, c := testCtx(t), must(Dial(s.addr))(t)
	defer c.Close()

	id, duplicate, err := c.PutWith(ctx, []byte("hi"), 5, 2*time.Second, 3*time.Second,
		PutOptions{Expire: 10 * time.Second, BuryOnExpiry: true})
	if id != 1 || duplicate || err != nil {
		t.Fatalf("PutWith = %d, %v, %v", id, duplicate, err)
	}
	id, duplicate, err = c.PutWith(ctx, []byte("hi"), 0, 0, time.Minute, PutOptions{Key: "a7"})
	if id != 1 || !duplicate || err != nil {
		t.Fatalf("PutWith again = %d, %v, %v", id, duplicate, err)
	}
	mustNil(t, c.TubeSet(ctx, "mail", TubeReserveRate, 100))

	// The extension fields are printed only off their defaults.
	st := must(c.StatsTube(ctx, "mail"))(t)
	want := TubeStats{Name: "mail", CurrentJobsReady: 1, DedupWindow: 300 * time.Second}
	if *st != want {
		t.Fatalf("stats-tube = %+v, want %+v", *st, want)
	}
	st = must(c.StatsTube(ctx, "mail"))(t)
	want = TubeStats{Name: "mail", MaxReserved: 5, ReserveRate: 100, DedupWindow: time.Hour, JobsExpired: 2, DuplicatePuts: 3}
	if *st != want {
		t.Fatalf("stats-tube = %+v, want %+v", *st, want)
	}

	// What the server would refuse, or what would break the framing, is not sent.
	for _, key := range []string{"-", "a b", "a\r\nput 0 0 1 1", "ü", strings.Repeat("k", 129)} {
		_, _, err := c.PutWith(ctx, nil, 0, 0, time.Minute, PutOptions{Key: key})
		wantErr(t, err, ErrBadFormat)
	}
	wantErr(t, c.TubeSet(ctx, "a\r\nquit", TubeMaxReserved, 1), ErrBadFormat)
	wantErr(t, c.TubeSet(ctx, "mail", "a\r\nquit", 1), ErrBadFormat)
	wantRequests(t, s, 1,
		"put-with - 10 bury 5 2 3 2\r\nhi\r\n",
		"put-with a7 0 delete 0 0 60 2\r\nhi\r\n",
		"tube-set mail reserve-rate 100\r\n",
		"stats-tube mail\r\n", "stats-tube mail\r\n")
}

func TestPutWith(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	mustNil(t, c.Use(ctx, "mail"))
	put := func(key, body string) (uint64, bool) {
		t.Helper()
		id, duplicate, err := c.PutWith(ctx, []byte(body), 0, 0, time.Minute, PutOptions{Key: key})
		mustNil(t, err)
		return id, duplicate
	}
	id, duplicate := put("a7", "hi")
	if id != 1 || duplicate {
		t.Fatalf("first put-with = %d, %v", id, duplicate)
	}
	for _, body := range []string{"hi", "other body: the key is the identity"} {
		id, duplicate = put("a7", body)
		if id != 1 || !duplicate {
			t.Fatalf("put-with again = %d, %v", id, duplicate)
		}
	}
	mustNil(t, c.Delete(ctx, 1))
	if id, duplicate = put("a7", "hi"); id != 1 || !duplicate {
		t.Fatalf("put-with after the delete = %d, %v (within dedup-window)", id, duplicate)
	}
	a, _ := put("", "no key")
	b, _ := put("", "no key")
	if a == b {
		t.Fatalf("two put-with without key = %d, %d", a, b)
	}
	st := must(c.StatsTube(ctx, "mail"))(t)
	if st.TotalJobs != 3 || st.DuplicatePuts != 3 || st.DedupWindow != 300*time.Second {
		t.Fatalf("stats-tube = %+v", *st)
	}
}

func TestPutWithExpiry(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	gone, _, err := c.PutWith(ctx, []byte("a"), 0, 0, time.Minute, PutOptions{Expire: time.Second})
	mustNil(t, err)
	buried, _, err := c.PutWith(ctx, []byte("b"), 0, 0, time.Minute, PutOptions{Expire: time.Second, BuryOnExpiry: true})
	mustNil(t, err)
	kept, _, err := c.PutWith(ctx, []byte("c"), 0, 0, time.Minute, PutOptions{Expire: time.Second})
	mustNil(t, err)
	wantEq(t, "reserved", must(c.ReserveJob(ctx, kept))(t).ID, kept) // reserved once: never expires
	mustNil(t, c.Release(ctx, kept, 0, 0))

	waitFor(t, 5*time.Second, "expiry", func() bool {
		return must(c.StatsTube(ctx, "default"))(t).JobsExpired == 2
	})
	_, err = c.Peek(ctx, gone)
	wantErr(t, err, ErrNotFound)
	wantEq(t, "on-expiry bury", must(c.StatsJob(ctx, buried))(t).State, "buried")
	wantEq(t, "reserved once", must(c.StatsJob(ctx, kept))(t).State, "ready")
}

func TestTubeSet(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	mustNil(t, c.Use(ctx, "mail"))
	must(c.Watch(ctx, "mail"))(t)
	must(c.Ignore(ctx, "default"))(t)
	for i := 0; i < 2; i++ {
		must(c.Put(ctx, []byte("x"), 0, 0, time.Minute))(t)
	}
	mustNil(t, c.TubeSet(ctx, "mail", TubeMaxReserved, 1))
	mustNil(t, c.TubeSet(ctx, "mail", TubeReserveRate, 100000))
	mustNil(t, c.TubeSet(ctx, "mail", TubeDedupWindow, 0))
	st := must(c.StatsTube(ctx, "mail"))(t)
	if st.MaxReserved != 1 || st.ReserveRate != 100000 || st.DedupWindow != 0 {
		t.Fatalf("stats-tube = %+v", *st)
	}
	must(c.ReserveWithTimeout(ctx, 0))(t)
	_, err := c.ReserveWithTimeout(ctx, 0) // the cap passes over the second job
	wantErr(t, err, ErrTimedOut)

	wantErr(t, c.TubeSet(ctx, "mail", TubeReserveRate, 100001), ErrBadFormat)
	wantErr(t, c.TubeSet(ctx, "mail", "speed", 1), ErrBadFormat)
}

// A real put-with whose reply is lost on the way back: the Producer's retry finds
// the job the lost attempt stored, and no second one is stored.
func TestProducerRetryAgainstSidecar(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx, c := testCtx(t), dial(t, s)
	p := newProducer(t, &Producer{Addr: replyDropper(t, s.Addr, 2), Tube: "mail"}) // 1: USING, 2: INSERTED
	id, duplicate, err := p.PutWith(ctx, []byte("hello"), 0, 0, time.Minute, PutOptions{Key: "order-1"})
	if err != nil || !duplicate {
		t.Fatalf("PutWith = %d, %v, %v; want a duplicate", id, duplicate, err)
	}
	wantEq(t, "body", string(must(c.Peek(ctx, id))(t).Body), "hello")
	st := must(c.StatsTube(ctx, "mail"))(t)
	if st.TotalJobs != 1 || st.DuplicatePuts != 1 {
		t.Fatalf("stats-tube = %+v", *st)
	}

	p = newProducer(t, &Producer{Addr: s.Addr, Idempotent: true})
	a := must(p.Put(ctx, []byte("a"), 0, 0, time.Minute))(t)
	b := must(p.Put(ctx, []byte("a"), 0, 0, time.Minute))(t)
	if a == b {
		t.Fatalf("two idempotent puts = %d, %d", a, b)
	}
}

// replyDropper is a proxy to addr. On its first connection it passes the server's
// replies (one line each) until the nth, which it drops, hanging up instead; it
// passes everything on later connections.
func replyDropper(t *testing.T, addr string, n int) string {
	l := must(net.Listen("tcp", "127.0.0.1:0"))(t)
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	go func() {
		for first := true; ; first = false {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				return
			}
			mu.Lock()
			open = append(open, client, server)
			mu.Unlock()
			go io.Copy(server, client)
			go func(drop bool) {
				defer client.Close()
				defer server.Close()
				if !drop {
					io.Copy(client, server)
					return
				}
				br := bufio.NewReader(server)
				for i := 1; i <= n; i++ {
					line, err := br.ReadString('\n')
					if err != nil || i == n {
						return
					}
					io.WriteString(client, line)
				}
			}(first)
		}
	}()
	return l.Addr().String()
}
