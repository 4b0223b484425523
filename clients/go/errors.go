package redstalk

import (
	"errors"
	"strconv"
)

// ReplyError is a protocol error word the server answered instead of a command's
// success reply. Every word has one value below; compare with errors.Is, or get the
// word with errors.As.
type ReplyError struct {
	Word string
}

func (e *ReplyError) Error() string { return "redstalk: " + e.Word }

// The server's error replies, one per protocol word.
var (
	ErrBadFormat      = &ReplyError{"BAD_FORMAT"}      // a malformed command or argument
	ErrUnknownCommand = &ReplyError{"UNKNOWN_COMMAND"} // no such command
	ErrOutOfMemory    = &ReplyError{"OUT_OF_MEMORY"}   // Redis refused the write (maxmemory)
	ErrInternalError  = &ReplyError{"INTERNAL_ERROR"}  // Redis unreachable or too slow: the command's effect is unknown
	ErrDraining       = &ReplyError{"DRAINING"}        // the sidecar is in drain mode and takes no puts
	ErrNotFound       = &ReplyError{"NOT_FOUND"}       // no such job, tube or room, or the job is not reserved by this connection
	ErrNotIgnored     = &ReplyError{"NOT_IGNORED"}     // ignore of the last watched tube
	ErrJobTooBig      = &ReplyError{"JOB_TOO_BIG"}     // the body is larger than the server's -z
	ErrExpectedCRLF   = &ReplyError{"EXPECTED_CRLF"}   // a put body was not followed by \r\n
	ErrDeadlineSoon   = &ReplyError{"DEADLINE_SOON"}   // a job reserved by this connection is in its last second
	ErrTimedOut       = &ReplyError{"TIMED_OUT"}       // a reserve's timeout passed with no job
	ErrBuried         = &ReplyError{"BURIED"}          // put or release buried the job; the error is a *BuriedError
	ErrUnauthorized   = &ReplyError{"UNAUTHORIZED"}    // auth first (the server has a token), or auth's token was wrong
)

var replyErrors = map[string]*ReplyError{}

func init() {
	for _, e := range []*ReplyError{ErrBadFormat, ErrUnknownCommand, ErrOutOfMemory, ErrInternalError,
		ErrDraining, ErrNotFound, ErrNotIgnored, ErrJobTooBig, ErrExpectedCRLF, ErrDeadlineSoon,
		ErrTimedOut, ErrBuried, ErrUnauthorized} {
		replyErrors[e.Word] = e
	}
}

// BuriedError is put's "BURIED <id>" and release's "BURIED": the job exists but went
// straight to the buried state. errors.Is(err, ErrBuried) matches it.
type BuriedError struct {
	ID uint64
}

func (e *BuriedError) Error() string { return "redstalk: BURIED " + strconv.FormatUint(e.ID, 10) }

// Is makes errors.Is(err, ErrBuried) true for a *BuriedError.
func (e *BuriedError) Is(target error) bool { return target == ErrBuried }

// UnexpectedReplyError is a reply that is neither the command's success reply nor
// a protocol error word.
type UnexpectedReplyError struct {
	Reply string
}

func (e *UnexpectedReplyError) Error() string {
	return "redstalk: unexpected reply " + strconv.Quote(e.Reply)
}

// ErrClosed is returned by calls on a closed connection, and by calls that were
// waiting for a reply when it closed; the wrapped text says why it closed.
var ErrClosed = errors.New("redstalk: connection closed")

// errorOf maps a reply that is not the expected one to its error.
func errorOf(rp reply) error {
	if e, ok := replyErrors[rp.word]; ok && len(rp.args) == 0 {
		return e
	}
	return &UnexpectedReplyError{Reply: rp.line}
}
