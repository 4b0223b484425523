package redstalk

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

const testToken = "s3cr3t-Token_42"

// newAuthServer starts a redstalk that wants testToken first.
func newAuthServer(t *testing.T) string {
	t.Helper()
	return newServer(t, "--auth-token", testToken).Addr
}

func dialAddr(t *testing.T, addr string) *Conn {
	t.Helper()
	c := must(Dial(addr))(t)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestAuth(t *testing.T) {
	t.Parallel()
	addr := newAuthServer(t)

	t.Run("right token", func(t *testing.T) {
		ctx, c := testCtx(t), dialAddr(t, addr)
		mustNil(t, c.Auth(ctx, testToken))
		wantEq(t, "used", must(c.ListTubeUsed(ctx))(t), "default")
		id := must(c.Put(ctx, []byte("hello"), 0, 0, time.Minute))(t)
		wantEq(t, "body", string(must(c.Peek(ctx, id))(t).Body), "hello")
		mustNil(t, c.Delete(ctx, id))
	})

	t.Run("wrong token", func(t *testing.T) {
		ctx, c := testCtx(t), dialAddr(t, addr)
		err := c.Auth(ctx, "nope")
		wantErr(t, err, ErrUnauthorized)
		var re *ReplyError
		if !errors.As(err, &re) || re.Word != "UNAUTHORIZED" {
			t.Fatalf("errors.As: %v", err)
		}
		mustNil(t, c.Auth(ctx, testToken)) // one failure: still open
		wantEq(t, "used", must(c.ListTubeUsed(ctx))(t), "default")
	})

	t.Run("commands before auth", func(t *testing.T) {
		ctx, c := testCtx(t), dialAddr(t, addr)
		_, err := c.ListTubeUsed(ctx)
		wantErr(t, err, ErrUnauthorized)
		_, err = c.Put(ctx, []byte("stats"), 0, 0, time.Minute) // the body is read, not run
		wantErr(t, err, ErrUnauthorized)
		wantErr(t, c.Use(ctx, "other"), ErrUnauthorized)
		_, err = c.ReserveWithTimeout(ctx, 0)
		wantErr(t, err, ErrUnauthorized)
		_, err = c.Stats(ctx)
		wantErr(t, err, ErrUnauthorized)
		mustNil(t, c.Auth(ctx, testToken))
		wantEq(t, "used (the refused use did not run)", must(c.ListTubeUsed(ctx))(t), "default")
		_, err = c.ReserveWithTimeout(ctx, 0) // the refused put stored nothing
		wantErr(t, err, ErrTimedOut)
	})

	t.Run("three wrong tokens close the connection", func(t *testing.T) {
		ctx, c := testCtx(t), dialAddr(t, addr)
		for _, wrong := range []string{"nope", testToken + "x", "s3cr3t"} {
			wantErr(t, c.Auth(ctx, wrong), ErrUnauthorized)
		}
		_, err := c.ListTubeUsed(ctx)
		wantErr(t, err, ErrClosed)
		other := dialAddr(t, addr) // other connections are not affected
		mustNil(t, other.Auth(ctx, testToken))
		wantEq(t, "used", must(other.ListTubeUsed(ctx))(t), "default")
	})

	t.Run("tokens refused unsent", func(t *testing.T) {
		ctx, c := testCtx(t), dialAddr(t, addr)
		for _, bad := range []string{"", "two words", "line\r\nstats", "caf\u00e9", strings.Repeat("x", 218)} {
			err := c.Auth(ctx, bad)
			wantErr(t, err, ErrBadFormat)
			if bad != "" && strings.Contains(err.Error(), bad) {
				t.Fatalf("the error shows the token: %v", err)
			}
		}
		// The longest token a 224-byte line holds is sent (and is wrong).
		wantErr(t, c.Auth(ctx, strings.Repeat("x", 216)+"!"), ErrUnauthorized)
		mustNil(t, c.Auth(ctx, testToken)) // nothing above closed the connection
	})
}

func TestAuthWithoutAServerToken(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	wantEq(t, "used", must(c.ListTubeUsed(ctx))(t), "default")
	mustNil(t, c.Auth(ctx, "anything"))
	wantEq(t, "used", must(c.ListTubeUsed(ctx))(t), "default")
}

func TestWorkerAuthToken(t *testing.T) {
	t.Parallel()
	addr := newAuthServer(t)
	ctx, c := testCtx(t), dialAddr(t, addr)
	mustNil(t, c.Auth(ctx, testToken))
	id := putIn(t, c, "authed", 1, time.Minute)[0]

	t.Run("without or with a wrong token Run fails", func(t *testing.T) {
		for _, token := range []string{"", "wrong"} {
			w := &Worker{Addr: addr, AuthToken: token, Tubes: []string{"authed"},
				Handler: func(context.Context, Job) error { return nil }}
			wantErr(t, w.Run(ctx), ErrUnauthorized)
		}
	})

	var got outcomes
	handled := make(chan Job, 1)
	stop := startWorker(t, &Worker{
		Addr: addr, AuthToken: testToken, Tubes: []string{"authed"}, OnOutcome: got.add,
		Handler: func(ctx context.Context, j Job) error { handled <- j; return nil },
	})
	waitFor(t, 20*time.Second, "the job's outcome", func() bool { return len(got.snapshot()) >= 1 })
	mustNil(t, stop())
	j := <-handled
	wantEq(t, "job", j.ID, id)
	wantEq(t, "body", string(j.Body), "authed-0")
	if o := got.snapshot()[0]; o.Action != Deleted || o.Err != nil {
		t.Fatalf("outcome %+v", o)
	}
	_, err := c.Peek(ctx, id)
	wantErr(t, err, ErrNotFound)
}
