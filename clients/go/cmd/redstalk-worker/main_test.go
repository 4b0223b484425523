package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	redstalk "github.com/redstalk/redstalk/clients/go"
	"github.com/redstalk/redstalk/clients/go/internal/testserver"
)

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

func server(t *testing.T) (*testserver.Sidecar, *redstalk.Conn) {
	s, err := testserver.StartSidecar(redis.URL(), testserver.UniquePrefix())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	c, err := redstalk.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s, c
}

func put(t *testing.T, c *redstalk.Conn, tube string, bodies ...string) {
	ctx := context.Background()
	if err := c.Use(ctx, tube); err != nil {
		t.Fatal(err)
	}
	for _, b := range bodies {
		if _, err := c.Put(ctx, []byte(b), 0, 0, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

// runFor runs the command until it exits (at most 20 s).
func runFor(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go func() { done <- run(ctx, args, &out, &errOut) }()
	code = <-done
	return code, out.String(), errOut.String()
}

func TestDrainsThenIdleExits(t *testing.T) {
	t.Parallel()
	s, c := server(t)
	var want []string
	for i := 0; i < 30; i++ {
		want = append(want, fmt.Sprintf("job %d", i))
	}
	put(t, c, "t1", want[:15]...)
	put(t, c, "t2", want[15:]...)
	put(t, c, "other", "not watched")
	start := time.Now()
	code, out, errOut := runFor(t, context.Background(), "-addr", s.Addr, "-tubes", "t1,t2",
		"-concurrency", "3", "-prefetch", "4", "-idle-exit", "700ms")
	if code != 0 || errOut != "" || time.Since(start) > 15*time.Second {
		t.Fatalf("exit %d after %v, stderr %q", code, time.Since(start), errOut)
	}
	var got []string
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var id int
		var body string
		if n, _ := fmt.Sscanf(line, "done %d", &id); n != 1 {
			t.Fatalf("line %d: %q", i, line)
		}
		body = strings.SplitN(line, " ", 3)[2]
		got = append(got, body)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("done bodies %q, want %q", got, want)
	}
}

func TestExecAndSignalStop(t *testing.T) {
	t.Parallel()
	s, c := server(t)
	put(t, c, "default", "ok", "fail")
	ctx, cancel := context.WithCancel(context.Background()) // as SIGTERM does
	time.AfterFunc(2*time.Second, cancel)
	code, out, errOut := runFor(t, ctx, "-addr", s.Addr, "-max-attempts", "1",
		"-exec", `read body; test "$body" != fail`)
	if code != 0 || out != "done 1 ok\n" || !strings.Contains(errOut, "buried 2") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	st, err := c.StatsJob(context.Background(), 2)
	if err != nil || st.State != "buried" {
		t.Fatalf("failed job: %+v %v", st, err)
	}
	if code, _, _ := runFor(t, ctx, "-bogus"); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
}

// Not parallel: t.Setenv. The token comes from the environment, never a flag.
func TestAuthTokenFromEnvironment(t *testing.T) {
	const token = "env-Token_7"
	s, err := testserver.StartSidecar(redis.URL(), testserver.UniquePrefix(), "--auth-token", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	c, err := redstalk.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Auth(context.Background(), token); err != nil {
		t.Fatal(err)
	}
	put(t, c, "default", "secret work")

	t.Setenv("REDSTALK_AUTH_TOKEN", "")
	code, _, errOut := runFor(t, context.Background(), "-addr", s.Addr, "-idle-exit", "500ms")
	if code != 1 || !strings.Contains(errOut, "UNAUTHORIZED") {
		t.Fatalf("without a token: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("REDSTALK_AUTH_TOKEN", token)
	code, out, errOut := runFor(t, context.Background(), "-addr", s.Addr, "-idle-exit", "500ms")
	if code != 0 || errOut != "" || !strings.Contains(out, " secret work\n") {
		t.Fatalf("with the token: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
