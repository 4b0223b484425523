package redstalk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redstalk/redstalk/clients/go/internal/testserver"
)

// redis is the one private redis-server of the test run; each test gets fresh
// sidecars on it under fresh prefixes (fresh, empty servers).
var redis *testserver.Redis

func TestMain(m *testing.M) {
	var err error
	if redis, err = testserver.StartRedis(); err != nil {
		fmt.Fprintln(os.Stderr, "starting redis-server:", err)
		os.Exit(1)
	}
	code := m.Run()
	redis.Stop()
	os.Exit(code)
}

// newServer starts a fresh redstalk for one test; it stops when the test ends.
func newServer(t testing.TB, flags ...string) *testserver.Sidecar {
	t.Helper()
	return newServerOn(t, redis, flags...)
}

func newServerOn(t testing.TB, r *testserver.Redis, flags ...string) *testserver.Sidecar {
	t.Helper()
	s, err := testserver.StartSidecar(r.URL(), testserver.UniquePrefix(), flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("redstalk %s output:\n%s", s.Addr, s.Output())
		}
	})
	return s
}

// dial opens a connection that closes when the test ends.
func dial(t testing.TB, s *testserver.Sidecar) *Conn {
	t.Helper()
	c, err := Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx bounds one test's calls, so a hung server fails the test instead of the run.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must(f())(t) fails the test if f failed, else returns f's value.
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func mustNil(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless errors.Is(err, want).
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

func wantEq[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
