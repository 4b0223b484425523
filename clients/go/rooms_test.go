package redstalk

import (
	"fmt"
	"testing"
	"time"
)

// The walk-through of PROTOCOL.md's waiting rooms section.
func TestRooms(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	mustNil(t, c.RoomConfig(ctx, "lobby", RoomSettings{Capacity: 2, CheckinTimeout: 30 * time.Second,
		ParticipantTimeout: 120 * time.Second, Grace: 30 * time.Second}))

	admitted := RoomStatus{Admitted: true}
	step := func(what string, got RoomStatus, err error, want RoomStatus) {
		t.Helper()
		mustNil(t, err)
		if got.Admitted != want.Admitted || got.Position != want.Position || (!got.Admitted && got.ETA <= 0) {
			t.Fatalf("%s = %+v, want %+v (and an ETA when waiting)", what, got, want)
		}
	}
	enter := func(user string) (RoomStatus, error) { return c.Enter(ctx, "lobby", user) }
	check := func(user string) (RoomStatus, error) { return c.Check(ctx, "lobby", user) }

	s, err := enter("ann")
	step("enter ann", s, err, admitted)
	s, err = enter("bob")
	step("enter bob", s, err, admitted)
	s, err = enter("cat")
	step("enter cat", s, err, RoomStatus{Position: 1})
	s, err = check("dan")
	step("check dan", s, err, RoomStatus{Position: 2})
	mustNil(t, c.Leave(ctx, "lobby", "ann")) // ann keeps a grace ticket
	s, err = check("cat")
	step("check cat", s, err, RoomStatus{Position: 1})
	s, err = enter("ann")
	step("ann back", s, err, admitted)
	mustNil(t, c.Leave(ctx, "lobby", "bob"))
	mustNil(t, c.Leave(ctx, "lobby", "bob")) // gives the ticket up
	s, err = check("cat")
	step("check cat", s, err, admitted)
	s, err = enter("cat")
	step("enter cat", s, err, admitted)
	mustNil(t, c.Leave(ctx, "lobby", "cat"))
	wantErr(t, c.Leave(ctx, "lobby", "zed"), ErrNotFound)

	st := must(c.StatsRoom(ctx, "lobby"))(t)
	want := RoomStats{Name: "lobby", Capacity: 2, CheckinTimeout: 30 * time.Second,
		ParticipantTimeout: 2 * time.Minute, Grace: 30 * time.Second, Configured: true,
		Participants: 1, Tickets: 1, Waiting: 1, AdmittedTotal: 3, LeftTotal: 3, TicketsUsedTotal: 1}
	if st.AdmissionRate <= 0 || st.LastInLineETA <= 0 {
		t.Fatalf("stats-room rate/eta = %+v", *st)
	}
	st.AdmissionRate, st.LastInLineETA = 0, 0
	if *st != want {
		t.Fatalf("stats-room = %+v\nwant %+v", *st, want)
	}

	mustNil(t, c.RoomRate(ctx, "lobby", 30))
	mustNil(t, c.PauseRoom(ctx, "lobby", true))
	mustNil(t, c.RoomLottery(ctx, "concert", time.Hour))
	st = must(c.StatsRoom(ctx, "lobby"))(t)
	if st.RateLimit != 30 || !st.Paused || st.OpenPlaces != 0 {
		t.Fatalf("rate-limited, paused stats-room = %+v", *st)
	}
	s = must(c.Enter(ctx, "concert", "eve"))(t)
	if s.Admitted || s.Position != 1 {
		t.Fatalf("enter during a lottery = %+v", s)
	}
	lottery := must(c.StatsRoom(ctx, "concert"))(t)
	if lottery.LotteryTimeLeft < 59*time.Minute || !lottery.Configured {
		t.Fatalf("lottery stats-room = %+v", *lottery)
	}
	mustNil(t, c.RoomLottery(ctx, "concert", 0))
	mustNil(t, c.PauseRoom(ctx, "lobby", false))
	mustNil(t, c.RoomRate(ctx, "lobby", 0))
	wantEq(t, "resumed", must(c.StatsRoom(ctx, "lobby"))(t).Paused, false)
	wantEq(t, "list-rooms", fmt.Sprint(must(c.ListRooms(ctx))(t)), "[concert lobby]")

	_, err = c.StatsRoom(ctx, "nowhere")
	wantErr(t, err, ErrNotFound)
	wantErr(t, c.RoomConfig(ctx, "lobby", RoomSettings{Capacity: 0, CheckinTimeout: time.Second, ParticipantTimeout: time.Second}), ErrBadFormat)
	_, err = c.Enter(ctx, "lobby", "two words")
	wantErr(t, err, ErrBadFormat)
	wantErr(t, c.Leave(ctx, "lobby", "x\ny"), ErrBadFormat)
}

func TestListRoomsEmpty(t *testing.T) {
	t.Parallel()
	ctx, c := testCtx(t), dial(t, newServer(t))
	wantEq(t, "no rooms", len(must(c.ListRooms(ctx))(t)), 0)
}
