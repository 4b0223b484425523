package redstalk

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The stats replies are decoded into these structs by their `yaml` tags. Keys the
// struct does not name are skipped, so a newer server's extra keys do no harm.
// Seconds are time.Duration; counters are uint64.

// ServerStats is the reply of Stats. Job counts and total-jobs/job-timeouts cover
// every sidecar of the Redis; command and connection counters are summed over the
// live sidecars; process fields (Pid, Rusage*, Uptime, Hostname, ...) describe the
// sidecar that answered.
type ServerStats struct {
	CurrentJobsUrgent     uint64        `yaml:"current-jobs-urgent"`
	CurrentJobsReady      uint64        `yaml:"current-jobs-ready"`
	CurrentJobsReserved   uint64        `yaml:"current-jobs-reserved"`
	CurrentJobsDelayed    uint64        `yaml:"current-jobs-delayed"`
	CurrentJobsBuried     uint64        `yaml:"current-jobs-buried"`
	CmdPut                uint64        `yaml:"cmd-put"`
	CmdPeek               uint64        `yaml:"cmd-peek"`
	CmdPeekReady          uint64        `yaml:"cmd-peek-ready"`
	CmdPeekDelayed        uint64        `yaml:"cmd-peek-delayed"`
	CmdPeekBuried         uint64        `yaml:"cmd-peek-buried"`
	CmdReserve            uint64        `yaml:"cmd-reserve"`
	CmdReserveWithTimeout uint64        `yaml:"cmd-reserve-with-timeout"`
	CmdDelete             uint64        `yaml:"cmd-delete"`
	CmdRelease            uint64        `yaml:"cmd-release"`
	CmdUse                uint64        `yaml:"cmd-use"`
	CmdWatch              uint64        `yaml:"cmd-watch"`
	CmdIgnore             uint64        `yaml:"cmd-ignore"`
	CmdBury               uint64        `yaml:"cmd-bury"`
	CmdKick               uint64        `yaml:"cmd-kick"`
	CmdTouch              uint64        `yaml:"cmd-touch"`
	CmdStats              uint64        `yaml:"cmd-stats"`
	CmdStatsJob           uint64        `yaml:"cmd-stats-job"`
	CmdStatsTube          uint64        `yaml:"cmd-stats-tube"`
	CmdListTubes          uint64        `yaml:"cmd-list-tubes"`
	CmdListTubeUsed       uint64        `yaml:"cmd-list-tube-used"`
	CmdListTubesWatched   uint64        `yaml:"cmd-list-tubes-watched"`
	CmdPauseTube          uint64        `yaml:"cmd-pause-tube"`
	JobTimeouts           uint64        `yaml:"job-timeouts"`
	TotalJobs             uint64        `yaml:"total-jobs"`
	MaxJobSize            uint64        `yaml:"max-job-size"`
	CurrentTubes          uint64        `yaml:"current-tubes"`
	CurrentConnections    uint64        `yaml:"current-connections"`
	CurrentProducers      uint64        `yaml:"current-producers"`
	CurrentWorkers        uint64        `yaml:"current-workers"`
	CurrentWaiting        uint64        `yaml:"current-waiting"`
	TotalConnections      uint64        `yaml:"total-connections"`
	Pid                   uint64        `yaml:"pid"`
	Version               string        `yaml:"version"`
	RusageUtime           float64       `yaml:"rusage-utime"` // seconds
	RusageStime           float64       `yaml:"rusage-stime"` // seconds
	Uptime                time.Duration `yaml:"uptime"`
	BinlogOldestIndex     uint64        `yaml:"binlog-oldest-index"`
	BinlogCurrentIndex    uint64        `yaml:"binlog-current-index"`
	BinlogRecordsMigrated uint64        `yaml:"binlog-records-migrated"`
	BinlogRecordsWritten  uint64        `yaml:"binlog-records-written"`
	BinlogMaxSize         uint64        `yaml:"binlog-max-size"`
	Draining              bool          `yaml:"draining"`
	ID                    string        `yaml:"id"` // the sidecar's id
	Hostname              string        `yaml:"hostname"`
	OS                    string        `yaml:"os"`
	Platform              string        `yaml:"platform"`
}

// TubeStats is the reply of StatsTube.
type TubeStats struct {
	Name                string        `yaml:"name"`
	CurrentJobsUrgent   uint64        `yaml:"current-jobs-urgent"`
	CurrentJobsReady    uint64        `yaml:"current-jobs-ready"`
	CurrentJobsReserved uint64        `yaml:"current-jobs-reserved"`
	CurrentJobsDelayed  uint64        `yaml:"current-jobs-delayed"`
	CurrentJobsBuried   uint64        `yaml:"current-jobs-buried"`
	TotalJobs           uint64        `yaml:"total-jobs"`
	CurrentUsing        uint64        `yaml:"current-using"`
	CurrentWatching     uint64        `yaml:"current-watching"`
	CurrentWaiting      uint64        `yaml:"current-waiting"`
	CmdDelete           uint64        `yaml:"cmd-delete"`
	CmdPauseTube        uint64        `yaml:"cmd-pause-tube"`
	Pause               time.Duration `yaml:"pause"`
	PauseTimeLeft       time.Duration `yaml:"pause-time-left"`
	// redstalk's settings (TubeSet) and put-with counts. The server prints them only
	// when one differs from its default, so a missing one is its default.
	MaxReserved   uint64        `yaml:"max-reserved"`
	ReserveRate   uint64        `yaml:"reserve-rate"`
	DedupWindow   time.Duration `yaml:"dedup-window"`
	JobsExpired   uint64        `yaml:"jobs-expired"`   // put-with jobs no reserve took before they expired
	DuplicatePuts uint64        `yaml:"duplicate-puts"` // put-with answered DUPLICATE
}

// defaultDedupWindow is dedup-window while no TubeSet changed it.
const defaultDedupWindow = 300 * time.Second

// JobStats is the reply of StatsJob.
type JobStats struct {
	ID       uint64        `yaml:"id"`
	Tube     string        `yaml:"tube"`
	State    string        `yaml:"state"` // ready, delayed, reserved or buried
	Pri      uint32        `yaml:"pri"`
	Age      time.Duration `yaml:"age"`
	Delay    time.Duration `yaml:"delay"`
	TTR      time.Duration `yaml:"ttr"`
	TimeLeft time.Duration `yaml:"time-left"`
	File     uint64        `yaml:"file"`
	Reserves uint64        `yaml:"reserves"`
	Timeouts uint64        `yaml:"timeouts"`
	Releases uint64        `yaml:"releases"`
	Buries   uint64        `yaml:"buries"`
	Kicks    uint64        `yaml:"kicks"`
}

// RoomStats is the reply of StatsRoom.
type RoomStats struct {
	Name                     string        `yaml:"name"`
	Capacity                 uint32        `yaml:"capacity"`
	CheckinTimeout           time.Duration `yaml:"checkin-timeout"`
	ParticipantTimeout       time.Duration `yaml:"participant-timeout"`
	Grace                    time.Duration `yaml:"grace"`
	RateLimit                uint32        `yaml:"rate-limit"` // admissions per minute at most; 0: none
	Paused                   bool          `yaml:"paused"`
	LotteryTimeLeft          time.Duration `yaml:"lottery-time-left"`
	Configured               bool          `yaml:"configured"`
	Participants             uint64        `yaml:"participants"`
	Tickets                  uint64        `yaml:"tickets"`
	Waiting                  uint64        `yaml:"waiting"`
	OpenPlaces               uint64        `yaml:"open-places"`
	AdmittedTotal            uint64        `yaml:"admitted-total"`
	DropoutsTotal            uint64        `yaml:"dropouts-total"`
	LeftTotal                uint64        `yaml:"left-total"`
	ParticipantTimeoutsTotal uint64        `yaml:"participant-timeouts-total"`
	TicketsUsedTotal         uint64        `yaml:"tickets-used-total"`
	TicketsExpiredTotal      uint64        `yaml:"tickets-expired-total"`
	AdmissionRate            float64       `yaml:"admission-rate"` // admissions per minute, decayed
	LastInLineETA            time.Duration `yaml:"last-in-line-eta"`
}

// Stats returns the server's statistics.
func (c *Conn) Stats(ctx context.Context) (*ServerStats, error) {
	s := new(ServerStats)
	if err := c.stats(ctx, command("stats").end(), s); err != nil {
		return nil, err
	}
	return s, nil
}

// StatsTube returns a tube's statistics; ErrNotFound if it does not exist.
func (c *Conn) StatsTube(ctx context.Context, tube string) (*TubeStats, error) {
	if err := checkNames(tube); err != nil {
		return nil, err
	}
	s := &TubeStats{DedupWindow: defaultDedupWindow}
	if err := c.stats(ctx, command("stats-tube").name(tube).end(), s); err != nil {
		return nil, err
	}
	return s, nil
}

// StatsJob returns a job's statistics; ErrNotFound if it does not exist.
func (c *Conn) StatsJob(ctx context.Context, id uint64) (*JobStats, error) {
	s := new(JobStats)
	if err := c.stats(ctx, command("stats-job").num(id).end(), s); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *Conn) stats(ctx context.Context, req []byte, out interface{}) error {
	rp, err := c.expect(ctx, req, "OK")
	if err != nil {
		return err
	}
	if len(rp.args) != 1 {
		return &UnexpectedReplyError{Reply: rp.line}
	}
	fields, err := parseYAMLMap(rp.body)
	if err != nil {
		return err
	}
	return decodeStats(fields, out)
}

func (c *Conn) list(ctx context.Context, req []byte) ([]string, error) {
	rp, err := c.expect(ctx, req, "OK")
	if err != nil {
		return nil, err
	}
	if len(rp.args) != 1 {
		return nil, &UnexpectedReplyError{Reply: rp.line}
	}
	return parseYAMLList(rp.body)
}

// yamlLines splits beanstalkd's YAML: "---\n", then one entry per "\n"-ended line.
func yamlLines(doc []byte) ([]string, error) {
	if !bytes.HasPrefix(doc, []byte("---\n")) {
		return nil, fmt.Errorf("redstalk: YAML does not start with ---: %q", doc)
	}
	text := string(doc[4:])
	if text == "" {
		return nil, nil
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("redstalk: YAML does not end in a line break: %q", doc)
	}
	return strings.Split(text[:len(text)-1], "\n"), nil
}

// parseYAMLMap reads "key: value" lines; double-quoted values are unquoted (the
// server does not escape inside them).
func parseYAMLMap(doc []byte) (map[string]string, error) {
	lines, err := yamlLines(doc)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(lines))
	for _, l := range lines {
		i := strings.Index(l, ": ")
		if i < 0 {
			return nil, fmt.Errorf("redstalk: YAML line %q is not key: value", l)
		}
		v := l[i+2:]
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		m[l[:i]] = v
	}
	return m, nil
}

// parseYAMLList reads "- item" lines.
func parseYAMLList(doc []byte) ([]string, error) {
	lines, err := yamlLines(doc)
	if err != nil {
		return nil, err
	}
	items := make([]string, 0, len(lines))
	for _, l := range lines {
		if !strings.HasPrefix(l, "- ") {
			return nil, fmt.Errorf("redstalk: YAML line %q is not a list item", l)
		}
		items = append(items, l[2:])
	}
	return items, nil
}

var durationType = reflect.TypeOf(time.Duration(0))

// decodeStats sets the fields of the struct out points to from the keys of their
// yaml tags.
func decodeStats(fields map[string]string, out interface{}) error {
	v := reflect.ValueOf(out).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		key := t.Field(i).Tag.Get("yaml")
		s, ok := fields[key]
		if !ok {
			continue
		}
		f := v.Field(i)
		var err error
		switch {
		case f.Type() == durationType:
			var n int64
			n, err = strconv.ParseInt(s, 10, 64)
			f.SetInt(n * int64(time.Second))
		case f.Kind() == reflect.String:
			f.SetString(s)
		case f.Kind() == reflect.Bool:
			var b bool
			b, err = strconv.ParseBool(s)
			f.SetBool(b)
		case f.Kind() == reflect.Float64:
			var x float64
			x, err = strconv.ParseFloat(s, 64)
			f.SetFloat(x)
		default: // unsigned integers
			var n uint64
			n, err = strconv.ParseUint(s, 10, f.Type().Bits())
			f.SetUint(n)
		}
		if err != nil {
			return fmt.Errorf("redstalk: stats field %s: %q is not a %s", key, s, f.Type())
		}
	}
	return nil
}
