package redstalk

import (
	"context"
	"time"
)

// RoomStatus answers Enter and Check.
type RoomStatus struct {
	// Admitted is ENTERED for Enter (the user is inside) and READY for Check (inside,
	// or may enter now with Enter).
	Admitted bool
	// Position is the place in line when not admitted (1: next).
	Position uint64
	// ETA is the estimated wait when not admitted; 0 means no estimate.
	ETA time.Duration
}

// RoomSettings are a room's settings for RoomConfig.
type RoomSettings struct {
	Capacity           uint32        // people inside at once, at least 1
	CheckinTimeout     time.Duration // someone waiting who does not check in for longer loses the place (>= 1 s)
	ParticipantTimeout time.Duration // someone inside who does not check in for longer is removed (>= 1 s)
	Grace              time.Duration // how long a place is kept for someone who left (0: not at all)
}

func (c *Conn) roomStatus(ctx context.Context, word, admitted, room, user string) (RoomStatus, error) {
	if err := checkNames(room, user); err != nil {
		return RoomStatus{}, err
	}
	rp, err := c.roundTrip(ctx, command(word).name(room).name(user).end())
	if err != nil {
		return RoomStatus{}, err
	}
	switch {
	case rp.word == admitted && len(rp.args) == 0:
		return RoomStatus{Admitted: true}, nil
	case rp.word == "WAITING" && len(rp.args) == 2:
		pos, err1 := parseNumber(rp.args[0], rp.line)
		eta, err2 := parseNumber(rp.args[1], rp.line)
		if err1 != nil || err2 != nil {
			return RoomStatus{}, &UnexpectedReplyError{Reply: rp.line}
		}
		return RoomStatus{Position: pos, ETA: time.Duration(eta) * time.Second}, nil
	}
	return RoomStatus{}, errorOf(rp)
}

// Enter lets user into room if their place in line allows it, else keeps (or
// takes) their place in line. It counts as a check-in.
func (c *Conn) Enter(ctx context.Context, room, user string) (RoomStatus, error) {
	return c.roomStatus(ctx, "enter", "ENTERED", room, user)
}

// Check tells whether user may enter room now, taking a place in line if they have
// none. It counts as a check-in but admits nobody.
func (c *Conn) Check(ctx context.Context, room, user string) (RoomStatus, error) {
	return c.roomStatus(ctx, "check", "READY", room, user)
}

// Leave takes user out of room (keeping a grace ticket, if the room gives them) or
// out of its line; ErrNotFound if they are in neither.
func (c *Conn) Leave(ctx context.Context, room, user string) error {
	if err := checkNames(room, user); err != nil {
		return err
	}
	_, err := c.expect(ctx, command("leave").name(room).name(user).end(), "LEFT")
	return err
}

// RoomConfig sets a room's settings; the room is then kept for good.
func (c *Conn) RoomConfig(ctx context.Context, room string, s RoomSettings) error {
	return c.setting(ctx, command("room-config").name(room).num(uint64(s.Capacity)).
		secs(s.CheckinTimeout).secs(s.ParticipantTimeout).secs(s.Grace).end(), room)
}

// RoomRate admits at most perMinute people into room in any 60 seconds; 0 lifts
// the limit.
func (c *Conn) RoomRate(ctx context.Context, room string, perMinute uint32) error {
	return c.setting(ctx, command("room-rate").name(room).num(uint64(perMinute)).end(), room)
}

// PauseRoom stops (true) or resumes (false) admissions into room.
func (c *Conn) PauseRoom(ctx context.Context, room string, paused bool) error {
	flag := uint64(0)
	if paused {
		flag = 1
	}
	return c.setting(ctx, command("pause-room").name(room).num(flag).end(), room)
}

// RoomLottery opens a pre-queue whose event starts in startIn (whole seconds):
// until then nobody is admitted and newcomers' places are drawn at random. 0
// starts the event now.
func (c *Conn) RoomLottery(ctx context.Context, room string, startIn time.Duration) error {
	return c.setting(ctx, command("room-lottery").name(room).secs(startIn).end(), room)
}

// setting runs a command that changes a setting of the named room or tube and
// answers a bare OK.
func (c *Conn) setting(ctx context.Context, req []byte, names ...string) error {
	if err := checkNames(names...); err != nil {
		return err
	}
	rp, err := c.expect(ctx, req, "OK")
	if err == nil && len(rp.args) != 0 {
		err = &UnexpectedReplyError{Reply: rp.line}
	}
	return err
}

// StatsRoom returns a room's settings and counters; ErrNotFound if it does not exist.
func (c *Conn) StatsRoom(ctx context.Context, room string) (*RoomStats, error) {
	if err := checkNames(room); err != nil {
		return nil, err
	}
	s := new(RoomStats)
	if err := c.stats(ctx, command("stats-room").name(room).end(), s); err != nil {
		return nil, err
	}
	return s, nil
}

// ListRooms returns the rooms that exist, sorted by name.
func (c *Conn) ListRooms(ctx context.Context) ([]string, error) {
	return c.list(ctx, command("list-rooms").end())
}
