package redstalk

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"time"
)

// Handler processes one job. Returning nil deletes the job; an error releases it
// after a backoff delay, or buries it on its MaxAttempts-th failure. ctx is not
// cancelled by a graceful stop (the handler may finish); it is cancelled when the
// worker learns that the job's reservation is lost (its TTR ran out, or the
// connection failed), since the job may then run elsewhere.
type Handler func(ctx context.Context, job Job) error

// Action is what a Worker did with a job.
type Action int

const (
	Deleted  Action = iota + 1 // the handler succeeded
	Released                   // the handler failed: released with a backoff delay
	Buried                     // the handler failed for the MaxAttempts-th time
	Returned                   // prefetched but not started when the worker stopped: released at once
)

func (a Action) String() string {
	switch a {
	case Deleted:
		return "deleted"
	case Released:
		return "released"
	case Buried:
		return "buried"
	case Returned:
		return "returned"
	}
	return "unknown"
}

// Outcome reports the end of one job at a Worker.
type Outcome struct {
	Job        Job
	Action     Action
	HandlerErr error         // Released, Buried: what the handler returned
	Delay      time.Duration // Released: the backoff delay
	// Err is set when the command that ends the job (or the stats-job before a
	// release or bury) failed, e.g. ErrNotFound after the reservation was lost. The
	// job is then wherever the server has it.
	Err error
}

// Worker reserves jobs from some tubes and runs Handler on each: reserve, handle,
// delete. It takes jobs with reserve-many, Prefetch at a time, and hands them to at
// most Concurrency handlers at once. Deletes, releases, buries and touches of
// different jobs are pipelined on its one connection.
//
// While a job is held (buffered or running) the worker keeps its reservation: a job
// still held after half a second gets a stats-job to learn its TTR, and a touch
// whenever half of its TTR is used.
//
// A failed job is released with a delay of BackoffBase doubled per earlier release
// (the job's `releases` count from stats-job), capped at BackoffMax, with jitter
// (a random value in [d/2, d], rounded up to whole seconds), and buried instead
// once it has failed MaxAttempts times (releases+1 >= MaxAttempts).
//
// The zero value of each option means its default.
type Worker struct {
	Addr    string  // host:port of redstalk
	Handler Handler // required

	// AuthToken, if set, is sent with auth before anything else (for a redstalk
	// started with a token); a wrong one makes Run return ErrUnauthorized.
	AuthToken string

	Tubes          []string      // tubes to watch; default ["default"]
	Prefetch       int           // jobs reserved ahead of the handlers, at most; default 16 (reserve-many takes <= 1000 at once)
	Concurrency    int           // handlers running at once; default 1
	MaxAttempts    int           // failures before a job is buried; default 5
	BackoffBase    time.Duration // release delay after a first failure; default 1s
	BackoffMax     time.Duration // release delay at most; default 5m
	ReserveTimeout time.Duration // how long one reserve-many waits when the worker holds no job; default 5s

	// OnOutcome, if set, is called once per job after the command that ended it
	// was answered. Calls are serialised.
	OnOutcome func(Outcome)
}

const (
	maxReserveMany = 1000
	// heartbeatEvery is how often held jobs are checked for a touch.
	heartbeatEvery = 100 * time.Millisecond
	// askTTRAfter is half the smallest TTR (1 s): a job handled sooner never needs
	// a touch, so it never costs a stats-job.
	askTTRAfter = 500 * time.Millisecond
	// pollEvery is how often a worker holding jobs looks for more. It never blocks
	// in a reserve then, since its deletes and touches would queue behind it.
	pollEvery = 250 * time.Millisecond
)

func (w Worker) withDefaults() Worker {
	if len(w.Tubes) == 0 {
		w.Tubes = []string{"default"}
	}
	if w.Prefetch <= 0 {
		w.Prefetch = 16
	}
	if w.Concurrency <= 0 {
		w.Concurrency = 1
	}
	if w.MaxAttempts <= 0 {
		w.MaxAttempts = 5
	}
	if w.BackoffBase <= 0 {
		w.BackoffBase = time.Second
	}
	if w.BackoffMax <= 0 {
		w.BackoffMax = 5 * time.Minute
	}
	if w.ReserveTimeout <= 0 {
		w.ReserveTimeout = 5 * time.Second
	}
	return w
}

// Run connects, watches the tubes and works until ctx is cancelled, then stops
// gracefully: it stops reserving, releases the jobs it prefetched but did not
// start, lets running handlers finish and ends their jobs, and returns nil. It
// returns an error if the connection fails (after the running handlers return);
// call Run again to reconnect.
func (w *Worker) Run(ctx context.Context) error {
	if w.Handler == nil {
		return errors.New("redstalk: Worker.Handler is nil")
	}
	opts := w.withDefaults()
	c, err := DialContext(ctx, opts.Addr)
	if err == nil {
		defer c.Close()
		if opts.AuthToken != "" {
			err = c.Auth(ctx, opts.AuthToken)
		}
		if err == nil {
			err = watchOnly(ctx, c, opts.Tubes)
		}
	}
	if err != nil {
		if ctx.Err() != nil { // stopped while starting
			return nil
		}
		return err
	}
	r := &run{
		w:       opts,
		c:       c,
		queue:   make(chan *heldJob, opts.Prefetch),
		stop:    make(chan struct{}),
		changed: make(chan struct{}, 1),
		held:    map[uint64]*heldJob{},
		rnd:     rand.New(rand.NewSource(time.Now().UnixNano())),
		base:    detached{ctx},
	}
	return r.run(ctx)
}

func watchOnly(ctx context.Context, c *Conn, tubes []string) error {
	keepDefault := false
	for _, t := range tubes {
		if _, err := c.Watch(ctx, t); err != nil {
			return err
		}
		keepDefault = keepDefault || t == "default"
	}
	if !keepDefault {
		_, err := c.Ignore(ctx, "default")
		return err
	}
	return nil
}

// detached keeps a context's values but not its cancellation, so that a graceful
// stop lets handlers finish (context.WithoutCancel, which Go 1.19 lacks).
type detached struct{ context.Context }

func (detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (detached) Done() <-chan struct{}       { return nil }
func (detached) Err() error                  { return nil }

// run is one Worker.Run.
type run struct {
	w       Worker
	c       *Conn
	queue   chan *heldJob // reserved, not started
	stop    chan struct{} // closed: start no job
	changed chan struct{} // a job left the queue or ended
	base    context.Context

	mu   sync.Mutex
	held map[uint64]*heldJob // every job reserved and not yet ended
	rnd  *rand.Rand

	handlers sync.WaitGroup
	endings  sync.WaitGroup // deletes, releases, buries under way
	asks     sync.WaitGroup // stats-jobs and touches under way
	reportMu sync.Mutex
}

type heldJob struct {
	Job
	ctx    context.Context
	cancel context.CancelFunc

	// guarded by run.mu
	since  time.Time     // when its TTR last started (reserve reply, or touch sent)
	ttr    time.Duration // 0 until a stats-job told
	pri    uint32
	asking bool // a stats-job or touch is in flight
	ending bool // its delete, release or bury is under way
}

func (r *run) run(ctx context.Context) error {
	heartbeat := make(chan struct{})
	go r.heartbeat(heartbeat)
	for i := 0; i < r.w.Concurrency; i++ {
		r.handlers.Add(1)
		go r.handle()
	}
	err := r.fetch(ctx)
	close(r.stop)
	if err != nil { // the reservations went with the connection
		r.mu.Lock()
		for _, h := range r.held {
			h.cancel()
		}
		r.mu.Unlock()
	}
	r.returnQueued()
	r.handlers.Wait()
	r.endings.Wait()
	close(heartbeat)
	r.asks.Wait()
	return err
}

// fetch reserves jobs into the queue until ctx ends or the connection fails.
func (r *run) fetch(ctx context.Context) error {
	for ctx.Err() == nil {
		room := cap(r.queue) - len(r.queue) // only fetch adds, so this is a lower bound
		if room > maxReserveMany {
			room = maxReserveMany
		}
		r.mu.Lock()
		idle := len(r.held) == 0
		r.mu.Unlock()
		// Holding jobs, refill once the queue is half empty: fewer, larger reserves.
		if room == 0 || (!idle && len(r.queue) > cap(r.queue)/2) {
			r.wait(ctx, 0)
			continue
		}
		// Holding no job, the worker can wait in the server, and a cancelled ctx may
		// close the connection (nothing is lost). Holding jobs, it only polls.
		callCtx, timeout := context.Background(), time.Duration(0)
		if idle {
			callCtx, timeout = ctx, r.w.ReserveTimeout
		}
		jobs, err := r.c.ReserveMany(callCtx, room, timeout)
		switch {
		case err == nil:
			r.hold(jobs)
		case errors.Is(err, ErrTimedOut) || errors.Is(err, ErrDeadlineSoon):
			if !idle {
				r.wait(ctx, pollEvery)
			}
		case ctx.Err() != nil:
			return nil
		default:
			return err
		}
	}
	return nil
}

// wait blocks until a job leaves the queue or ends, ctx ends, or d (if not 0) passes.
func (r *run) wait(ctx context.Context, d time.Duration) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-r.changed:
	case <-ctx.Done():
	case <-timeout:
	}
}

func (r *run) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *run) hold(jobs []Job) {
	now := time.Now()
	hs := make([]*heldJob, len(jobs))
	r.mu.Lock()
	for i, j := range jobs {
		ctx, cancel := context.WithCancel(r.base)
		hs[i] = &heldJob{Job: j, ctx: ctx, cancel: cancel, since: now}
		r.held[j.ID] = hs[i]
	}
	r.mu.Unlock()
	for _, h := range hs {
		r.queue <- h
	}
}

func (r *run) handle() {
	defer r.handlers.Done()
	for {
		select {
		case <-r.stop:
			return
		case h := <-r.queue:
			r.signal()
			select {
			case <-r.stop: // taken in the race with stop: it was never started
				r.end(h, r.giveBack)
				return
			default:
			}
			err := r.w.Handler(h.ctx, h.Job)
			r.end(h, func(h *heldJob) Outcome { return r.finish(h, err) })
		}
	}
}

// returnQueued gives back every job still in the queue.
func (r *run) returnQueued() {
	for {
		select {
		case h := <-r.queue:
			r.end(h, r.giveBack)
		default:
			return
		}
	}
}

// end runs the command that ends a job in its own goroutine, so the next job starts
// without waiting for the reply (commands pipeline on the connection), then reports.
func (r *run) end(h *heldJob, how func(*heldJob) Outcome) {
	r.mu.Lock()
	h.ending = true
	r.mu.Unlock()
	r.endings.Add(1)
	go func() {
		defer r.endings.Done()
		o := how(h)
		r.reportMu.Lock()
		if r.w.OnOutcome != nil {
			r.w.OnOutcome(o)
		}
		r.reportMu.Unlock()
		h.cancel()
		r.mu.Lock()
		delete(r.held, h.ID)
		r.mu.Unlock()
		r.signal()
	}()
}

func (r *run) finish(h *heldJob, handlerErr error) Outcome {
	bg := context.Background()
	o := Outcome{Job: h.Job, HandlerErr: handlerErr}
	if handlerErr == nil {
		o.Action, o.Err = Deleted, r.c.Delete(bg, h.ID)
		return o
	}
	o.Action = Released
	st, err := r.c.StatsJob(bg, h.ID)
	if err != nil {
		o.Err = err
		return o
	}
	if st.Releases+1 >= uint64(r.w.MaxAttempts) {
		o.Action, o.Err = Buried, r.c.Bury(bg, h.ID, st.Pri)
		return o
	}
	r.mu.Lock()
	o.Delay = backoff(st.Releases, r.w.BackoffBase, r.w.BackoffMax, r.rnd.Int63n)
	r.mu.Unlock()
	o.Err = r.c.Release(bg, h.ID, st.Pri, o.Delay)
	return o
}

// giveBack releases a job that was never started, at its own priority.
func (r *run) giveBack(h *heldJob) Outcome {
	bg := context.Background()
	o := Outcome{Job: h.Job, Action: Returned}
	r.mu.Lock()
	pri, known := h.pri, h.ttr > 0
	r.mu.Unlock()
	if !known {
		st, err := r.c.StatsJob(bg, h.ID)
		if err != nil {
			o.Err = err
			return o
		}
		pri = st.Pri
	}
	o.Err = r.c.Release(bg, h.ID, pri, 0)
	return o
}

// backoff is the release delay after a job's releases-th release: jittered,
// rounded up to the protocol's whole seconds.
func backoff(releases uint64, base, max time.Duration, int63n func(int64) int64) time.Duration {
	d := jittered(releases, base, max, int63n)
	return (d + time.Second - 1).Truncate(time.Second)
}

// jittered is base doubled n times, capped at max, then a random point of its
// upper half, so that those who failed together retry apart. int63n is
// rand.Int63n.
func jittered(n uint64, base, max time.Duration, int63n func(int64) int64) time.Duration {
	d := base
	for i := uint64(0); i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	half := d / 2
	return half + time.Duration(int63n(int64(d-half)+1))
}

func (r *run) heartbeat(done <-chan struct{}) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			r.beat(now)
		}
	}
}

// beat asks the TTR of jobs held for a while and touches those half-way to their
// deadline.
func (r *run) beat(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.held {
		if h.asking || h.ending {
			continue
		}
		switch {
		case h.ttr == 0 && now.Sub(h.since) >= askTTRAfter:
			h.asking = true
			r.asks.Add(1)
			go r.askTTR(h)
		case h.ttr > 0 && now.Sub(h.since) >= h.ttr/2:
			h.asking = true
			r.asks.Add(1)
			go r.touch(h)
		}
	}
}

func (r *run) askTTR(h *heldJob) {
	defer r.asks.Done()
	st, err := r.c.StatsJob(context.Background(), h.ID)
	r.mu.Lock()
	defer r.mu.Unlock()
	h.asking = false
	if h.ending {
		return
	}
	switch {
	case err == nil && st.State == "reserved":
		h.ttr, h.pri = st.TTR, st.Pri
	case err == nil || errors.Is(err, ErrNotFound): // its TTR ran out already
		h.cancel()
	}
}

func (r *run) touch(h *heldJob) {
	defer r.asks.Done()
	sent := time.Now()
	err := r.c.Touch(context.Background(), h.ID)
	r.mu.Lock()
	defer r.mu.Unlock()
	h.asking = false
	switch {
	case err == nil:
		h.since = sent
	case errors.Is(err, ErrNotFound) && !h.ending:
		h.cancel()
	}
}
