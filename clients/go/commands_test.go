package redstalk

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))

	id := must(c.Put(ctx, []byte("hello"), 10, 0, 60*time.Second))(t)
	wantEq(t, "first id", id, uint64(1))
	j := must(c.Peek(ctx, id))(t)
	if j.ID != id || string(j.Body) != "hello" {
		t.Fatalf("peek = %+v", j)
	}
	j = must(c.PeekReady(ctx))(t)
	wantEq(t, "peek-ready id", j.ID, id)

	j = must(c.Reserve(ctx))(t)
	wantEq(t, "reserved", string(j.Body), "hello")
	st := must(c.StatsJob(ctx, id))(t)
	want := JobStats{ID: id, Tube: "default", State: "reserved", Pri: 10, TTR: time.Minute, Reserves: 1}
	st.Age, st.TimeLeft = 0, 0
	if *st != want {
		t.Fatalf("stats-job = %+v, want %+v", *st, want)
	}
	mustNil(t, c.Touch(ctx, id))
	mustNil(t, c.Release(ctx, id, 5, 0))
	j = must(c.ReserveWithTimeout(ctx, time.Second))(t)
	mustNil(t, c.Bury(ctx, j.ID, 7))
	j = must(c.PeekBuried(ctx))(t)
	wantEq(t, "peek-buried", j.ID, id)
	wantEq(t, "kick", must(c.Kick(ctx, 10))(t), uint64(1))
	st = must(c.StatsJob(ctx, id))(t)
	if st.State != "ready" || st.Pri != 7 || st.Releases != 1 || st.Buries != 1 || st.Kicks != 1 {
		t.Fatalf("stats-job after kick = %+v", *st)
	}
	mustNil(t, c.Delete(ctx, id))
	wantErr(t, c.Delete(ctx, id), ErrNotFound)
	_, err := c.Peek(ctx, id)
	wantErr(t, err, ErrNotFound)
}

func TestDelayedBuriedAndReserveJob(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx, c, other := testCtx(t), dial(t, s), dial(t, s)

	id := must(c.Put(ctx, []byte("later"), 0, time.Hour, time.Minute))(t)
	j := must(c.PeekDelayed(ctx))(t)
	wantEq(t, "peek-delayed", j.ID, id)
	st := must(c.StatsJob(ctx, id))(t)
	wantEq(t, "state", st.State, "delayed")
	wantEq(t, "delay", st.Delay, time.Hour)
	_, err := c.PeekReady(ctx)
	wantErr(t, err, ErrNotFound)
	mustNil(t, c.KickJob(ctx, id))
	wantErr(t, c.KickJob(ctx, id), ErrNotFound) // ready now: nothing to kick

	// reserve-job takes a job out of any state but reserved.
	j = must(c.ReserveJob(ctx, id))(t)
	wantEq(t, "reserve-job", string(j.Body), "later")
	_, err = c.ReserveJob(ctx, id)
	wantErr(t, err, ErrNotFound)
	mustNil(t, c.Release(ctx, id, 0, time.Hour))
	wantEq(t, "kick delayed", must(c.Kick(ctx, 5))(t), uint64(1))

	// Another connection can neither touch nor release nor bury a job reserved here.
	j = must(c.Reserve(ctx))(t)
	wantErr(t, other.Touch(ctx, j.ID), ErrNotFound)
	wantErr(t, other.Release(ctx, j.ID, 0, 0), ErrNotFound)
	wantErr(t, other.Bury(ctx, j.ID, 0), ErrNotFound)
	wantErr(t, other.Delete(ctx, j.ID), ErrNotFound)
	mustNil(t, c.Delete(ctx, j.ID))
}

func TestReserveTimeouts(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))

	start := time.Now()
	_, err := c.ReserveWithTimeout(ctx, 0)
	wantErr(t, err, ErrTimedOut)
	_, err = c.ReserveWithTimeout(ctx, time.Second)
	wantErr(t, err, ErrTimedOut)
	if d := time.Since(start); d < 900*time.Millisecond || d > 5*time.Second {
		t.Fatalf("TIMED_OUT after %v, want about 1s", d)
	}

	// A job with TTR 1 is inside its safety margin at once: the next reserve says so.
	must(c.Put(ctx, []byte("x"), 0, 0, time.Second))(t)
	must(c.Reserve(ctx))(t)
	_, err = c.ReserveWithTimeout(ctx, 2*time.Second)
	wantErr(t, err, ErrDeadlineSoon)
	_, err = c.Reserve(ctx)
	wantErr(t, err, ErrDeadlineSoon)
}

func TestReserveMany(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx, c, producer := testCtx(t), dial(t, s), dial(t, s)

	for i, pri := range []uint32{5, 1, 5, 0} {
		must(c.Put(ctx, []byte(fmt.Sprint("job", i+1)), pri, 0, time.Minute))(t)
	}
	jobs := must(c.ReserveMany(ctx, 3, 0))(t)
	var got []string
	for _, j := range jobs {
		got = append(got, fmt.Sprintf("%d:%s", j.ID, j.Body))
	}
	// priority first, then id
	wantEq(t, "reserve-many order", strings.Join(got, " "), "4:job4 2:job2 1:job1")
	for _, j := range jobs {
		wantEq(t, "state", must(c.StatsJob(ctx, j.ID))(t).State, "reserved")
	}
	jobs = must(c.ReserveMany(ctx, 10, 0))(t)
	wantEq(t, "the rest", len(jobs), 1)
	_, err := c.ReserveMany(ctx, 10, 0)
	wantErr(t, err, ErrTimedOut)
	for _, n := range []int{0, 1001, -1} {
		_, err = c.ReserveMany(ctx, n, 0)
		wantErr(t, err, ErrBadFormat)
	}

	// A waiting reserve-many returns as soon as a job is there.
	go func() {
		time.Sleep(300 * time.Millisecond)
		producer.Put(ctx, []byte("late"), 0, 0, time.Minute)
	}()
	start := time.Now()
	jobs = must(c.ReserveMany(ctx, 5, 10*time.Second))(t)
	if len(jobs) != 1 || string(jobs[0].Body) != "late" || time.Since(start) > 5*time.Second {
		t.Fatalf("waiting reserve-many = %v after %v", jobs, time.Since(start))
	}
}

func TestTubes(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))

	wantEq(t, "list-tube-used", must(c.ListTubeUsed(ctx))(t), "default")
	mustNil(t, c.Use(ctx, "emails"))
	wantEq(t, "list-tube-used", must(c.ListTubeUsed(ctx))(t), "emails")
	id := must(c.Put(ctx, []byte("hi"), 2000, 0, time.Minute))(t)
	must(c.Put(ctx, []byte("urgent"), 1, 0, time.Minute))(t)

	wantEq(t, "watch", must(c.Watch(ctx, "emails"))(t), 2)
	wantEq(t, "watch again", must(c.Watch(ctx, "emails"))(t), 2)
	wantEq(t, "ignore", must(c.Ignore(ctx, "default"))(t), 1)
	wantEq(t, "ignore unwatched", must(c.Ignore(ctx, "nope"))(t), 1)
	_, err := c.Ignore(ctx, "emails")
	wantErr(t, err, ErrNotIgnored)
	wantEq(t, "watched", fmt.Sprint(must(c.ListTubesWatched(ctx))(t)), "[emails]")
	tubes := must(c.ListTubes(ctx))(t)
	sort.Strings(tubes)
	wantEq(t, "tubes", fmt.Sprint(tubes), "[default emails]")

	st := must(c.StatsTube(ctx, "emails"))(t)
	if st.Name != "emails" || st.CurrentJobsReady != 2 || st.CurrentJobsUrgent != 1 || st.TotalJobs != 2 ||
		st.CurrentUsing != 1 || st.CurrentWatching != 1 {
		t.Fatalf("stats-tube = %+v", *st)
	}
	_, err = c.StatsTube(ctx, "nope")
	wantErr(t, err, ErrNotFound)

	mustNil(t, c.PauseTube(ctx, "emails", time.Hour))
	st = must(c.StatsTube(ctx, "emails"))(t)
	if st.Pause != time.Hour || st.PauseTimeLeft < 59*time.Minute || st.CmdPauseTube != 1 {
		t.Fatalf("paused stats-tube = %+v", *st)
	}
	_, err = c.ReserveWithTimeout(ctx, 0)
	wantErr(t, err, ErrTimedOut)
	mustNil(t, c.PauseTube(ctx, "emails", 0))
	wantEq(t, "after unpause", must(c.ReserveWithTimeout(ctx, 2*time.Second))(t).ID, id+1)
	wantErr(t, c.PauseTube(ctx, "nope", 1), ErrNotFound)

	// A name with a line break would smuggle in a second command: refused unsent.
	wantErr(t, c.Use(ctx, "a\r\nput 0 0 1 1"), ErrBadFormat)
	wantEq(t, "still", must(c.ListTubeUsed(ctx))(t), "emails")
}

func TestServerStats(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	must(c.Put(ctx, []byte("a"), 0, 0, time.Minute))(t)
	must(c.Put(ctx, []byte("b"), 0, time.Hour, time.Minute))(t)
	st := must(c.Stats(ctx))(t)
	if st.Version != "1.13" || st.CurrentJobsReady != 1 || st.CurrentJobsDelayed != 1 || st.CmdPut != 2 ||
		st.TotalJobs != 2 || st.MaxJobSize != 65535 || st.Pid == 0 || st.Hostname == "" ||
		strings.Contains(st.Hostname, `"`) || st.Draining || st.BinlogMaxSize != 10485760 {
		t.Fatalf("stats = %+v", *st)
	}
}

// Many goroutines share one Conn: every command is in flight at once and each gets
// its own reply.
func TestPipelining(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	const n = 300
	ids := make([]uint64, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := []byte(fmt.Sprint("job-", i))
			id, err := c.Put(ctx, body, 0, 0, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			j, err := c.Peek(ctx, id)
			if err != nil || !bytes.Equal(j.Body, body) {
				t.Errorf("peek %d = %q, %v; want %q", id, j.Body, err, body)
			}
			ids[i] = id
		}(i)
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %d twice", id)
		}
		seen[id] = true
	}
	for _, id := range ids {
		wg.Add(1)
		go func(id uint64) { defer wg.Done(); mustNilAsync(t, c.Delete(ctx, id)) }(id)
	}
	wg.Wait()
	wantEq(t, "left", must(c.Stats(ctx))(t).CurrentJobsReady, uint64(0))
}

func mustNilAsync(t *testing.T, err error) {
	if err != nil {
		t.Error(err)
	}
}

func TestBigAndBinaryBodies(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	body := make([]byte, 65535)
	for i := range body {
		body[i] = byte(i) // includes \r\n and \0
	}
	id := must(c.Put(ctx, body, 0, 0, time.Minute))(t)
	if !bytes.Equal(must(c.Peek(ctx, id))(t).Body, body) {
		t.Fatal("65535-byte body changed")
	}
	id = must(c.Put(ctx, nil, 0, 0, time.Minute))(t)
	wantEq(t, "empty body", len(must(c.Peek(ctx, id))(t).Body), 0)
	_, err := c.Put(ctx, make([]byte, 65536), 0, 0, time.Minute)
	wantErr(t, err, ErrJobTooBig)
	wantEq(t, "still in sync", must(c.ListTubeUsed(ctx))(t), "default")
}

func TestQuit(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx, c, other := testCtx(t), dial(t, s), dial(t, s)
	id := must(c.Put(ctx, []byte("x"), 0, 0, time.Minute))(t)
	must(c.Reserve(ctx))(t)
	mustNil(t, c.Quit(ctx))
	_, err := c.ListTubeUsed(ctx)
	wantErr(t, err, ErrClosed)
	// quit hands the reserved job back.
	wantEq(t, "after quit", must(other.StatsJob(ctx, id))(t).State, "ready")
}
