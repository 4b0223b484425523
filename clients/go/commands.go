package redstalk

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Job is a job as reserve and peek return it.
type Job struct {
	ID   uint64
	Body []byte
}

// request builds one command line.
type request []byte

func command(word string) request { return append(make(request, 0, 64), word...) }

func (r request) num(n uint64) request         { return strconv.AppendUint(append(r, ' '), n, 10) }
func (r request) int(n int) request            { return strconv.AppendInt(append(r, ' '), int64(n), 10) }
func (r request) secs(d time.Duration) request { return r.num(seconds(d)) }
func (r request) name(s string) request        { return append(append(r, ' '), s...) }
func (r request) end() []byte                  { return append(r, '\r', '\n') }

// seconds is d in whole seconds, rounded down, as the protocol counts time.
func seconds(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(d / time.Second)
}

// checkNames refuses a tube, room or user name with a line break: sent as it is,
// it would end the command early and the rest would run as another command.
func checkNames(names ...string) error {
	for _, n := range names {
		if strings.ContainsAny(n, "\r\n") {
			return fmt.Errorf("%w: name %q contains a line break (not sent)", ErrBadFormat, n)
		}
	}
	return nil
}

func (rp reply) number() (uint64, error) {
	if len(rp.args) != 1 {
		return 0, &UnexpectedReplyError{Reply: rp.line}
	}
	n, err := strconv.ParseUint(rp.args[0], 10, 64)
	if err != nil {
		return 0, &UnexpectedReplyError{Reply: rp.line}
	}
	return n, nil
}

// Put puts a job into the used tube and returns its id. delay and ttr are whole
// seconds (rounded down; a ttr below 1 s becomes 1 s on the server). A put the
// server buries returns a *BuriedError carrying the id.
func (c *Conn) Put(ctx context.Context, body []byte, pri uint32, delay, ttr time.Duration) (uint64, error) {
	id, _, err := c.put(ctx, command("put").num(uint64(pri)).secs(delay).secs(ttr), body)
	return id, err
}

// maxKey is the longest key put-with takes.
const maxKey = 128

// PutOptions are what put-with adds to a put.
type PutOptions struct {
	// Key, if set, makes the put safe to send again: a later put-with of the same
	// key into the same tube stores nothing and answers the first job's id, as long
	// as that job exists and for the tube's dedup-window after its delete. 1..128
	// bytes of printable ASCII without spaces; "" for none.
	Key string
	// Expire, if not 0, ends a job that no reserve has taken within it (whole
	// seconds from the put, its delay included): it is deleted, or buried with
	// BuryOnExpiry.
	Expire       time.Duration
	BuryOnExpiry bool
}

// check refuses a key the server would refuse, and "-", which on the wire means
// no key at all and so would silently lose the put's protection.
func (o PutOptions) check() error {
	if o.Key == "-" {
		return fmt.Errorf("%w: key \"-\" means no key on the wire; leave Key empty (not sent)", ErrBadFormat)
	}
	if len(o.Key) > maxKey || !printable(o.Key) {
		return fmt.Errorf("%w: key %q is not 1..%d printable ASCII bytes without spaces (not sent)", ErrBadFormat, o.Key, maxKey)
	}
	return nil
}

// PutWith puts a job into the used tube as Put does, with a key that makes it safe
// to retry and an expiry. It returns the job's id, and duplicate true when the tube
// already had a job of this key: then nothing was stored and id is that job's. A
// Key the server would refuse is refused unsent with ErrBadFormat.
//
// If the connection fails before the reply, the job may or may not exist: send
// the same PutWith again, on any connection, to find out (a Producer does that
// by itself).
func (c *Conn) PutWith(ctx context.Context, body []byte, pri uint32, delay, ttr time.Duration, opts PutOptions) (id uint64, duplicate bool, err error) {
	if err := opts.check(); err != nil {
		return 0, false, err
	}
	key, onExpiry := opts.Key, "delete"
	if key == "" {
		key = "-"
	}
	if opts.BuryOnExpiry {
		onExpiry = "bury"
	}
	return c.put(ctx, command("put-with").name(key).secs(opts.Expire).name(onExpiry).
		num(uint64(pri)).secs(delay).secs(ttr), body)
}

// put completes a put or put-with line with the body's length, sends it with the
// body and reads the job's id.
func (c *Conn) put(ctx context.Context, line request, body []byte) (id uint64, duplicate bool, err error) {
	req := line.int(len(body)).end()
	req = append(append(req, body...), '\r', '\n')
	rp, err := c.roundTrip(ctx, req)
	if err != nil {
		return 0, false, err
	}
	if rp.word != "INSERTED" && rp.word != "DUPLICATE" && rp.word != "BURIED" {
		return 0, false, errorOf(rp)
	}
	if id, err = rp.number(); err != nil {
		return 0, false, err
	}
	if rp.word == "BURIED" {
		return id, false, &BuriedError{ID: id}
	}
	return id, rp.word == "DUPLICATE", nil
}

// Use sets the tube that Put, PeekReady, PeekDelayed, PeekBuried and Kick act on.
func (c *Conn) Use(ctx context.Context, tube string) error {
	if err := checkNames(tube); err != nil {
		return err
	}
	_, err := c.expect(ctx, command("use").name(tube).end(), "USING")
	return err
}

func (c *Conn) reserved(ctx context.Context, req []byte) (Job, error) {
	rp, err := c.expect(ctx, req, "RESERVED")
	return rp.job, err
}

// Reserve waits, without a timeout, for a job from the watched tubes. It returns
// ErrDeadlineSoon when a job this connection holds enters its last second.
func (c *Conn) Reserve(ctx context.Context) (Job, error) {
	return c.reserved(ctx, command("reserve").end())
}

// ReserveWithTimeout waits up to timeout (whole seconds) for a job from the watched
// tubes: ErrTimedOut when none came, ErrDeadlineSoon as for Reserve.
func (c *Conn) ReserveWithTimeout(ctx context.Context, timeout time.Duration) (Job, error) {
	return c.reserved(ctx, command("reserve-with-timeout").secs(timeout).end())
}

// ReserveJob reserves the job id if it is ready, delayed or buried, in any tube.
func (c *Conn) ReserveJob(ctx context.Context, id uint64) (Job, error) {
	return c.reserved(ctx, command("reserve-job").num(id).end())
}

// ReserveMany reserves up to count (1..1000) jobs from the watched tubes at once,
// in reserve order, waiting up to timeout (whole seconds) for the first one. Each
// job's TTR runs from this reserve. Errors as ReserveWithTimeout's.
func (c *Conn) ReserveMany(ctx context.Context, count int, timeout time.Duration) ([]Job, error) {
	rp, err := c.expect(ctx, command("reserve-many").int(count).secs(timeout).end(), "RESERVED-MANY")
	return rp.jobs, err
}

// Delete deletes a job reserved by this connection, or a ready, delayed or buried one.
func (c *Conn) Delete(ctx context.Context, id uint64) error {
	_, err := c.expect(ctx, command("delete").num(id).end(), "DELETED")
	return err
}

// Release puts a job reserved by this connection back, ready or (delay > 0) delayed,
// with a new priority.
func (c *Conn) Release(ctx context.Context, id uint64, pri uint32, delay time.Duration) error {
	_, err := c.expect(ctx, command("release").num(id).num(uint64(pri)).secs(delay).end(), "RELEASED")
	if errors.Is(err, ErrBuried) {
		return &BuriedError{ID: id}
	}
	return err
}

// Bury buries a job reserved by this connection, with a new priority.
func (c *Conn) Bury(ctx context.Context, id uint64, pri uint32) error {
	_, err := c.expect(ctx, command("bury").num(id).num(uint64(pri)).end(), "BURIED")
	return err
}

// Touch restarts the TTR of a job reserved by this connection.
func (c *Conn) Touch(ctx context.Context, id uint64) error {
	_, err := c.expect(ctx, command("touch").num(id).end(), "TOUCHED")
	return err
}

// Watch adds a tube to the watch list and returns how many tubes are watched.
func (c *Conn) Watch(ctx context.Context, tube string) (int, error) {
	if err := checkNames(tube); err != nil {
		return 0, err
	}
	return c.watching(ctx, command("watch").name(tube).end())
}

// Ignore removes a tube from the watch list and returns how many tubes are still
// watched; ErrNotIgnored for the last one.
func (c *Conn) Ignore(ctx context.Context, tube string) (int, error) {
	if err := checkNames(tube); err != nil {
		return 0, err
	}
	return c.watching(ctx, command("ignore").name(tube).end())
}

func (c *Conn) watching(ctx context.Context, req []byte) (int, error) {
	rp, err := c.expect(ctx, req, "WATCHING")
	if err != nil {
		return 0, err
	}
	n, err := rp.number()
	return int(n), err
}

func (c *Conn) found(ctx context.Context, req []byte) (Job, error) {
	rp, err := c.expect(ctx, req, "FOUND")
	return rp.job, err
}

// Peek returns the job id in any tube and state, without changing it.
func (c *Conn) Peek(ctx context.Context, id uint64) (Job, error) {
	return c.found(ctx, command("peek").num(id).end())
}

// PeekReady returns the next job a reserve would take from the used tube.
func (c *Conn) PeekReady(ctx context.Context) (Job, error) {
	return c.found(ctx, command("peek-ready").end())
}

// PeekDelayed returns the delayed job of the used tube that is ready soonest.
func (c *Conn) PeekDelayed(ctx context.Context) (Job, error) {
	return c.found(ctx, command("peek-delayed").end())
}

// PeekBuried returns the oldest buried job of the used tube.
func (c *Conn) PeekBuried(ctx context.Context) (Job, error) {
	return c.found(ctx, command("peek-buried").end())
}

// Kick moves up to bound jobs of the used tube to ready: its buried jobs if it has
// any, else its delayed ones. It returns how many moved.
func (c *Conn) Kick(ctx context.Context, bound uint32) (uint64, error) {
	rp, err := c.expect(ctx, command("kick").num(uint64(bound)).end(), "KICKED")
	if err != nil {
		return 0, err
	}
	return rp.number()
}

// KickJob moves the buried or delayed job id to ready.
func (c *Conn) KickJob(ctx context.Context, id uint64) error {
	_, err := c.expect(ctx, command("kick-job").num(id).end(), "KICKED")
	return err
}

// ListTubes returns the names of all existing tubes, in no particular order.
func (c *Conn) ListTubes(ctx context.Context) ([]string, error) {
	return c.list(ctx, command("list-tubes").end())
}

// ListTubeUsed returns the tube Put puts into.
func (c *Conn) ListTubeUsed(ctx context.Context) (string, error) {
	rp, err := c.expect(ctx, command("list-tube-used").end(), "USING")
	if err != nil {
		return "", err
	}
	if len(rp.args) != 1 {
		return "", &UnexpectedReplyError{Reply: rp.line}
	}
	return rp.args[0], nil
}

// ListTubesWatched returns the watched tubes.
func (c *Conn) ListTubesWatched(ctx context.Context) ([]string, error) {
	return c.list(ctx, command("list-tubes-watched").end())
}

// PauseTube stops reserves from a tube for delay (whole seconds); 0 resumes it now.
func (c *Conn) PauseTube(ctx context.Context, tube string, delay time.Duration) error {
	if err := checkNames(tube); err != nil {
		return err
	}
	_, err := c.expect(ctx, command("pause-tube").name(tube).secs(delay).end(), "PAUSED")
	return err
}

// TubeSetting is a setting of a tube that TubeSet changes.
type TubeSetting string

// The tube settings. Each applies on every sidecar of the Redis at once and
// outlives the tube (a tube emptied and created again keeps it).
const (
	TubeMaxReserved TubeSetting = "max-reserved" // jobs of the tube reserved at once, at most; 0 (default): no cap
	TubeReserveRate TubeSetting = "reserve-rate" // reserves of the tube's jobs in any one second, at most (<= 100000); 0 (default): no cap
	TubeDedupWindow TubeSetting = "dedup-window" // seconds a deleted job's put-with key is remembered; default 300
)

// TubeSet changes a setting of a tube (it does not create the tube). A setting
// the server lacks, or a rate over 100000, is ErrBadFormat.
func (c *Conn) TubeSet(ctx context.Context, tube string, setting TubeSetting, value uint32) error {
	return c.setting(ctx, command("tube-set").name(tube).name(string(setting)).num(uint64(value)).end(),
		tube, string(setting))
}

// maxToken is the longest token auth can send: a command line is at most 224
// bytes, "auth " and "\r\n" included.
const maxToken = 224 - len("auth ") - len("\r\n")

// Auth gives the server's token (redstalk's --auth-token). A server with a token
// answers every other command ErrUnauthorized until it gets the right one; a wrong
// token is ErrUnauthorized too, and the server closes the connection after three.
// A server without a token accepts any. A token that is empty, longer than 217
// bytes, or not printable ASCII without spaces is refused unsent with ErrBadFormat
// (the error does not show the token).
func (c *Conn) Auth(ctx context.Context, token string) error {
	if len(token) == 0 || len(token) > maxToken {
		return fmt.Errorf("%w: auth token of %d bytes, not 1..%d (not sent)", ErrBadFormat, len(token), maxToken)
	}
	if !printable(token) {
		return fmt.Errorf("%w: auth token is not printable ASCII without spaces (not sent)", ErrBadFormat)
	}
	_, err := c.expect(ctx, command("auth").name(token).end(), "OK")
	return err
}

// printable tells whether s is printable ASCII without spaces (\x21-\x7e), as
// tokens and keys must be: anything else could end the command line early.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Quit asks the server to close the connection and waits until it has, then
// closes the Conn. Jobs the connection had reserved go back to ready.
func (c *Conn) Quit(ctx context.Context) error {
	_, err := c.roundTrip(ctx, command("quit").end())
	if errors.Is(err, ErrClosed) { // the server closing is the answer
		err = nil
	}
	c.Close()
	return err
}
