// Command redstalk-worker works jobs from redstalk tubes with redstalk.Worker.
//
//	redstalk-worker -addr 127.0.0.1:11300 -tubes emails,sms -concurrency 4 -exec ./send.sh
//
// Each job is handled by -exec (a shell command given the body on stdin; a
// non-zero exit fails the job), or, without -exec, accepted as it is. For every
// job it deletes it prints `done <id> <body>` on stdout; releases, buries and
// errors go to stderr. It stops gracefully on SIGTERM or SIGINT, or after
// -idle-exit without a job, and then exits 0. With $REDSTALK_AUTH_TOKEN set it
// authenticates with that token first (a token is kept out of the flags, which
// other users can see in ps).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	redstalk "github.com/redstalk/redstalk/clients/go"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("redstalk-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:11300", "redstalk address, host:port")
	tubes := fs.String("tubes", "default", "comma-separated tubes to watch")
	command := fs.String("exec", "", "shell command run per job with its body on stdin (default: accept every job)")
	idleExit := fs.Duration("idle-exit", 0, "stop after this long without a job (0: never)")
	w := redstalk.Worker{}
	fs.IntVar(&w.Prefetch, "prefetch", 16, "jobs reserved ahead of the handlers (reserve-many count)")
	fs.IntVar(&w.Concurrency, "concurrency", 1, "jobs handled at once")
	fs.IntVar(&w.MaxAttempts, "max-attempts", 5, "failures before a job is buried")
	fs.DurationVar(&w.BackoffBase, "backoff-base", time.Second, "release delay after a first failure")
	fs.DurationVar(&w.BackoffMax, "backoff-max", 5*time.Minute, "release delay at most")
	fs.DurationVar(&w.ReserveTimeout, "reserve-timeout", 5*time.Second, "how long one reserve waits when idle")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "redstalk-worker: unexpected arguments %q\n", fs.Args())
		return 2
	}
	w.Addr, w.Tubes = *addr, strings.Split(*tubes, ",")
	w.AuthToken = os.Getenv("REDSTALK_AUTH_TOKEN")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := newIdleClock()
	if *idleExit > 0 {
		go idle.cancelAfter(ctx, *idleExit, cancel)
	}
	w.Handler = func(ctx context.Context, job redstalk.Job) error {
		idle.busy(1)
		defer idle.busy(-1)
		if *command == "" {
			return nil
		}
		cmd := exec.CommandContext(ctx, "sh", "-c", *command)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(job.Body), stderr, stderr
		return cmd.Run()
	}
	w.OnOutcome = func(o redstalk.Outcome) {
		switch {
		case o.Err != nil:
			fmt.Fprintf(stderr, "%s %d failed: %v\n", o.Action, o.Job.ID, o.Err)
		case o.Action == redstalk.Deleted:
			fmt.Fprintf(stdout, "done %d %s\n", o.Job.ID, o.Job.Body)
		case o.Action == redstalk.Released:
			fmt.Fprintf(stderr, "released %d for %v: %v\n", o.Job.ID, o.Delay, o.HandlerErr)
		case o.Action == redstalk.Buried:
			fmt.Fprintf(stderr, "buried %d: %v\n", o.Job.ID, o.HandlerErr)
		}
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "redstalk-worker:", err)
		return 1
	}
	return 0
}

// idleClock knows how long no handler has run.
type idleClock struct {
	mu      sync.Mutex
	running int
	since   time.Time // the last handler start or end
}

func newIdleClock() *idleClock { return &idleClock{since: time.Now()} }

func (c *idleClock) busy(delta int) {
	c.mu.Lock()
	c.running += delta
	c.since = time.Now()
	c.mu.Unlock()
}

func (c *idleClock) cancelAfter(ctx context.Context, d time.Duration, cancel func()) {
	tick := time.NewTicker(d / 10)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			c.mu.Lock()
			idle := c.running == 0 && now.Sub(c.since) >= d
			c.mu.Unlock()
			if idle {
				cancel()
				return
			}
		}
	}
}
