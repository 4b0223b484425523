package redstalk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redstalk/redstalk/clients/go/internal/testserver"
)

// outcomes collects a worker's outcomes for a test.
type outcomes struct {
	mu   sync.Mutex
	list []Outcome
}

func (o *outcomes) add(x Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, x)
}

func (o *outcomes) snapshot() []Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Outcome(nil), o.list...)
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startWorker runs w until the test stops it (or ends); stop cancels and returns Run's error.
func startWorker(t *testing.T, w *Worker) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	stopped := false
	var err error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = errors.New("Run did not return within 20s of the cancel")
			}
		}
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func putIn(t *testing.T, c *Conn, tube string, n int, ttr time.Duration) []uint64 {
	t.Helper()
	ctx := testCtx(t)
	mustNil(t, c.Use(ctx, tube))
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = must(c.Put(ctx, []byte(fmt.Sprintf("%s-%d", tube, i)), 0, 0, ttr))(t)
	}
	return ids
}

func TestWorkerProcessesAll(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := dial(t, s)
	putIn(t, c, "a", 40, time.Minute)
	putIn(t, c, "b", 40, time.Minute)
	putIn(t, c, "c", 1, time.Minute)       // not watched
	putIn(t, c, "default", 1, time.Minute) // not watched either: the worker ignores default

	var mu sync.Mutex
	handled := map[string]int{}
	var got outcomes
	stop := startWorker(t, &Worker{
		Addr: s.Addr, Tubes: []string{"a", "b"}, Prefetch: 8, Concurrency: 3, OnOutcome: got.add,
		Handler: func(ctx context.Context, j Job) error {
			mu.Lock()
			handled[string(j.Body)]++
			mu.Unlock()
			return nil
		},
	})
	waitFor(t, 20*time.Second, "80 outcomes", func() bool { return len(got.snapshot()) >= 80 })
	mustNil(t, stop())
	for _, o := range got.snapshot() {
		if o.Action != Deleted || o.Err != nil {
			t.Fatalf("outcome %+v", o)
		}
	}
	for body, n := range handled {
		if n != 1 {
			t.Fatalf("%s handled %d times", body, n)
		}
	}
	wantEq(t, "handled", len(handled), 80)
	st := must(c.Stats(testCtx(t)))(t)
	if st.CurrentJobsReady != 2 || st.CurrentJobsReserved != 0 {
		t.Fatalf("left: %d ready, %d reserved", st.CurrentJobsReady, st.CurrentJobsReserved)
	}
}

func TestWorkerRetriesThenBuries(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := dial(t, s)
	id := putIn(t, c, "default", 1, time.Minute)[0]
	var got outcomes
	failure := errors.New("boom")
	var attempts []time.Time
	startWorker(t, &Worker{
		Addr: s.Addr, MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: time.Second, OnOutcome: got.add,
		Handler: func(ctx context.Context, j Job) error {
			attempts = append(attempts, time.Now()) // Concurrency 1: no race
			return failure
		},
	})
	waitFor(t, 15*time.Second, "3 outcomes", func() bool { return len(got.snapshot()) >= 3 })
	list := got.snapshot()
	for i, want := range []Action{Released, Released, Buried} {
		o := list[i]
		if o.Action != want || o.Err != nil || !errors.Is(o.HandlerErr, failure) || o.Job.ID != id {
			t.Fatalf("outcome %d = %+v, want %v", i, o, want)
		}
		if want == Released && o.Delay != time.Second {
			t.Fatalf("release delay %v, want 1s", o.Delay)
		}
	}
	if gap := attempts[1].Sub(attempts[0]); gap < 900*time.Millisecond {
		t.Fatalf("retried after %v, before its backoff", gap)
	}
	st := must(c.StatsJob(testCtx(t), id))(t)
	if st.State != "buried" || st.Releases != 2 || st.Buries != 1 || st.Reserves != 3 {
		t.Fatalf("stats-job = %+v", *st)
	}
}

func TestBackoff(t *testing.T) {
	top := func(n int64) int64 { return n - 1 }
	bottom := func(int64) int64 { return 0 }
	for _, c := range []struct {
		releases  uint64
		base, max time.Duration
		int63n    func(int64) int64
		want      time.Duration
	}{
		{0, time.Second, time.Minute, top, time.Second},
		{3, time.Second, time.Minute, top, 8 * time.Second},
		{3, time.Second, time.Minute, bottom, 4 * time.Second},
		{10, time.Second, time.Minute, top, time.Minute},
		{200, time.Second, time.Minute, bottom, 30 * time.Second},
		{0, 300 * time.Millisecond, time.Minute, bottom, time.Second}, // whole seconds, rounded up
	} {
		if got := backoff(c.releases, c.base, c.max, c.int63n); got != c.want {
			t.Errorf("backoff(%d, %v, %v) = %v, want %v", c.releases, c.base, c.max, got, c.want)
		}
	}
}

// Jobs held longer than their TTR, running or waiting in the prefetch buffer, stay
// reserved: the worker touches them.
func TestWorkerTouchesHeldJobs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := dial(t, s)
	putIn(t, c, "default", 2, 2*time.Second)
	var got outcomes
	startWorker(t, &Worker{
		Addr: s.Addr, Prefetch: 4, OnOutcome: got.add,
		Handler: func(ctx context.Context, j Job) error {
			select {
			case <-time.After(2500 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return errors.New("reservation lost")
			}
		},
	})
	waitFor(t, 15*time.Second, "2 outcomes", func() bool { return len(got.snapshot()) >= 2 })
	for _, o := range got.snapshot() {
		if o.Action != Deleted || o.Err != nil {
			t.Fatalf("outcome %+v", o)
		}
	}
	st := must(c.Stats(testCtx(t)))(t)
	if st.JobTimeouts != 0 || st.CmdTouch == 0 {
		t.Fatalf("job-timeouts %d, cmd-touch %d", st.JobTimeouts, st.CmdTouch)
	}
}

// On stop the worker hands back what it prefetched at once, and finishes the job
// in hand before Run returns.
func TestWorkerGracefulStop(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := dial(t, s)
	ctx := testCtx(t)
	putIn(t, c, "default", 6, time.Minute)
	started, release := make(chan uint64, 10), make(chan struct{})
	var got outcomes
	stop := startWorker(t, &Worker{
		Addr: s.Addr, Prefetch: 4, OnOutcome: got.add,
		Handler: func(ctx context.Context, j Job) error {
			started <- j.ID
			<-release
			return nil
		},
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the worker's stop, should the test fail
	first := <-started
	// The worker took 4 and started one; it refills only once its buffer is half empty.
	reserved := func() uint64 { return must(c.Stats(ctx))(t).CurrentJobsReserved }
	waitFor(t, 10*time.Second, "1 running + 3 prefetched", func() bool { return reserved() == 4 })

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	waitFor(t, 10*time.Second, "3 returned while the handler still runs", func() bool { return len(got.snapshot()) == 3 })
	for _, o := range got.snapshot() {
		if o.Action != Returned || o.Err != nil || o.Job.ID == first {
			t.Fatalf("outcome %+v", o)
		}
		wantEq(t, "returned job state", must(c.StatsJob(ctx, o.Job.ID))(t).State, "ready")
	}
	wantEq(t, "still reserved", reserved(), uint64(1))
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) before its handler", err)
	case <-time.After(200 * time.Millisecond):
	}
	unblock()
	mustNil(t, <-stopped)
	list := got.snapshot()
	if last := list[len(list)-1]; len(list) != 4 || last.Action != Deleted || last.Job.ID != first {
		t.Fatalf("outcomes %+v", list)
	}
	wantEq(t, "ready", must(c.Stats(ctx))(t).CurrentJobsReady, uint64(5))
	select {
	case id := <-started:
		t.Fatalf("job %d started after the stop", id)
	default:
	}
}

func TestWorkerStopsAtOnceWhenIdle(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	stop := startWorker(t, &Worker{Addr: s.Addr, ReserveTimeout: 30 * time.Second,
		Handler: func(context.Context, Job) error { return nil }})
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	mustNil(t, stop())
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("stop took %v", d)
	}
}

func TestWorkerConnectionLost(t *testing.T) {
	t.Parallel()
	s, err := testserver.StartSidecar(redis.URL(), testserver.UniquePrefix())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	w := &Worker{Addr: s.Addr, Handler: func(context.Context, Job) error { return nil }}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	time.Sleep(300 * time.Millisecond)
	s.Stop()
	select {
	case err := <-done:
		wantErr(t, err, ErrClosed)
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after the server stopped")
	}
	if err := (&Worker{Addr: s.Addr}).Run(context.Background()); err == nil {
		t.Fatal("a Worker without Handler ran")
	}
}
