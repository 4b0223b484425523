package redstalk

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redstalk/redstalk/clients/go/internal/testserver"
)

// The error words the typed API cannot provoke (it never sends a bad command)
// go through the same reply reader and error mapping.
func TestUnknownCommandAndExpectedCRLF(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	rp := must(c.roundTrip(ctx, []byte("frobnicate\r\n")))(t)
	wantErr(t, errorOf(rp), ErrUnknownCommand)
	// A 0-byte body followed by "XY" instead of "\r\n".
	rp = must(c.roundTrip(ctx, []byte("put 0 0 10 0\r\nXY")))(t)
	wantErr(t, errorOf(rp), ErrExpectedCRLF)
	wantErr(t, c.Use(ctx, "-starts-with-dash"), ErrBadFormat)
	var re *ReplyError
	if !errors.As(c.Use(ctx, "bad name"), &re) || re.Word != "BAD_FORMAT" {
		t.Fatalf("errors.As: %v", re)
	}
	wantEq(t, "in sync", must(c.ListTubeUsed(ctx))(t), "default")
}

func TestDraining(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx, c := testCtx(t), dial(t, s)
	must(c.Put(ctx, []byte("before"), 0, 0, time.Minute))(t)
	mustNil(t, s.Signal(syscall.SIGUSR1))
	deadline := time.Now().Add(5 * time.Second)
	for !must(c.Stats(ctx))(t).Draining {
		if time.Now().After(deadline) {
			t.Fatal("not draining after SIGUSR1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err := c.Put(ctx, []byte("after"), 0, 0, time.Minute)
	wantErr(t, err, ErrDraining)
	wantEq(t, "reserve still works", string(must(c.Reserve(ctx))(t).Body), "before")
}

// OUT_OF_MEMORY and INTERNAL_ERROR come from Redis refusing or not answering: this
// test has a redis-server of its own to do that to.
func TestOutOfMemoryAndInternalError(t *testing.T) {
	t.Parallel()
	r, err := testserver.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ctx, c := testCtx(t), dial(t, newServerOn(t, r))
	must(c.Put(ctx, []byte("fits"), 0, 0, time.Minute))(t)

	redisDo(t, r, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	redisDo(t, r, "CONFIG", "SET", "maxmemory", "1")
	_, err = c.Put(ctx, []byte("refused"), 0, 0, time.Minute)
	wantErr(t, err, ErrOutOfMemory)
	redisDo(t, r, "CONFIG", "SET", "maxmemory", "0")

	r.Stop()
	_, err = c.Put(ctx, []byte("unreachable"), 0, 0, time.Minute)
	wantErr(t, err, ErrInternalError)
}

func redisDo(t *testing.T, r *testserver.Redis, args ...string) {
	t.Helper()
	if reply, err := r.Do(args...); err != nil || reply != "+OK" {
		t.Fatalf("redis %v: %q %v", args, reply, err)
	}
}

func TestBuriedAndUnexpectedReplies(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := must(Dial(fakeServer(t, "BURIED 7\r\n", "BURIED\r\n", "BURIED\r\n", "WHAT 1\r\n", "NOT_FOUND 1\r\n")))(t)
	defer c.Close()

	id, err := c.Put(ctx, []byte("x"), 0, 0, time.Minute)
	var be *BuriedError
	if !errors.As(err, &be) || be.ID != 7 || id != 7 || !errors.Is(err, ErrBuried) {
		t.Fatalf("put: %d %v", id, err)
	}
	err = c.Release(ctx, 9, 0, 0)
	if !errors.As(err, &be) || be.ID != 9 || !errors.Is(err, ErrBuried) {
		t.Fatalf("release: %v", err)
	}
	mustNil(t, c.Bury(ctx, 9, 0)) // bury's success reply is BURIED
	var ue *UnexpectedReplyError
	if err := c.Touch(ctx, 1); !errors.As(err, &ue) || ue.Reply != "WHAT 1" {
		t.Fatalf("touch: %v", err)
	}
	if err := c.Touch(ctx, 1); !errors.As(err, &ue) || ue.Reply != "NOT_FOUND 1" {
		t.Fatalf("an error word with arguments is not that error: %v", err)
	}
}

// A reply that breaks the framing closes the connection: nothing after it can be
// matched to its command.
func TestMalformedReplyClosesConn(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := must(Dial(fakeServer(t, "FOUND 1 5\r\nhelloXX")))(t)
	defer c.Close()
	_, err := c.Peek(ctx, 1)
	wantErr(t, err, ErrClosed)
	_, err = c.Peek(ctx, 1)
	wantErr(t, err, ErrClosed)
}

func TestContextEndsCall(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c, other := dial(t, s), dial(t, s)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Reserve(cancelled)
	wantErr(t, err, context.Canceled)
	wantEq(t, "not sent, conn intact", must(c.ListTubeUsed(testCtx(t)))(t), "default")

	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Reserve(short)
	wantErr(t, err, context.DeadlineExceeded)
	if time.Since(start) > 3*time.Second {
		t.Fatalf("reserve returned after %v", time.Since(start))
	}
	_, err = c.ListTubeUsed(testCtx(t))
	wantErr(t, err, ErrClosed)
	// The abandoned reserve's connection is gone, so a new job is not lost to it.
	ctx := testCtx(t)
	id := must(other.Put(ctx, []byte("x"), 0, 0, time.Minute))(t)
	wantEq(t, "reserved by the live conn", must(other.ReserveWithTimeout(ctx, 2*time.Second))(t).ID, id)
}
