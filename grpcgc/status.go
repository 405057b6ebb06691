package grpcgc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/kobe/groupconc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// callError is an error of the executor, not of the call's handler or of
// the wire. It carries a gRPC status for the peer, and unwraps to the
// executor's error. So errors.Is(err, groupconc.ErrRejected) holds for a
// rejection, and status.Code(err) gives its code.
type callError struct {
	st  *status.Status
	err error
}

func (e *callError) Error() string { return e.st.Message() }

// GRPCStatus returns the status the call ends with.
func (e *callError) GRPCStatus() *status.Status { return e.st }

// Unwrap returns the executor's error.
func (e *callError) Unwrap() error { return e.err }

// endedCall is a call's error once its context ended: the Canceled or
// DeadlineExceeded status that gRPC gives when the client went away or the
// deadline passed. It unwraps to the context's error too, so the executor
// counts the call CANCELLED, as a task that returns its context's error,
// and not FAILED. The interceptors return the status itself (callResult).
type endedCall struct{ status, ctx error }

func (e *endedCall) Error() string { return e.status.Error() }

func (e *endedCall) Unwrap() []error { return []error{e.status, e.ctx} }

// ended returns err, the error of a call that ran in ctx, as an endedCall
// if err is the status that says the call's context ended. ctx is most
// often a task's context, derived from the call's context outer. gRPC may
// see outer end a moment before ctx does. A task's context takes a cancel
// of outer as its Done is asked for. So only a deadline of ctx's own that
// has passed may still be on its way, and ended waits for that one. Then
// the executor sees ctx end too. Any other ctx that has not ended, such
// as one a RejectionHandler passed to Rejection.Run, may end only once the
// call returns, or never. It is not waited for, and err is returned as is.
func ended(outer, ctx context.Context, err error) error {
	if err == nil || outer.Err() == nil && ctx.Err() == nil {
		return err
	}
	if c := status.Code(err); c != codes.Canceled && c != codes.DeadlineExceeded {
		return err
	}
	done := ctx.Done() // first: a task's context forwards outer's cancel here
	if ctx.Err() == nil {
		dl, ok := ctx.Deadline()
		if done == nil || !ok || time.Now().Before(dl) {
			return err
		}
		<-done // its deadline has passed: it ends by it
	}
	return &endedCall{err, ctx.Err()}
}

// callResult returns the error of a call that ran, as the call returned it.
func callResult(err error) error {
	if e, ok := err.(*endedCall); ok {
		return e.status
	}
	return err
}

// toStatus turns an error that groupconc.Do or SubmitWith returned, before
// the call ran, into an error with a gRPC status.
//   - A rejection is ResourceExhausted, or Unavailable when the global
//     queue was full, since then no group of this server has room.
//   - The end of the call's context is Canceled or DeadlineExceeded.
//   - A closed executor, or a group shut down or evicted, is Unavailable.
//   - A bad task (a cost or priority out of range, or a key with more
//     ancestors than a group may have) is InvalidArgument.
//   - An error with a gRPC status of its own, such as a RejectionHandler
//     may return, keeps it.
//   - Anything else is Internal.
func toStatus(ctx context.Context, err error) error {
	var re *groupconc.RejectedError
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.As(err, &re):
		code := codes.ResourceExhausted
		if re.Reason == groupconc.ReasonGlobalQueueFull {
			code = codes.Unavailable
		}
		msg := "grpcgc: call rejected by group " + quote(re.GroupKey) + ": " + re.Reason
		return &callError{status.New(code, msg), err}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return &callError{status.FromContextError(err), err}
	case errors.Is(err, groupconc.ErrClosed),
		errors.Is(err, groupconc.ErrGroupShutdown),
		errors.Is(err, groupconc.ErrGroupEvicted):
		return &callError{status.New(codes.Unavailable, message(err)), err}
	case errors.Is(err, groupconc.ErrInvalidTask):
		return &callError{status.New(codes.InvalidArgument, message(err)), err}
	}
	return &callError{status.New(codes.Internal, message(err)), err}
}

// message returns the status message for err: its first 256 bytes, cut
// between runes, and the count of all if it is longer. The error may name
// a caller's key, or the chain of its ancestors, and the peer gets no
// more of it than of any caller's string (see quote).
func message(err error) string {
	const limit = 256
	s := "grpcgc: " + err.Error()
	if len(s) <= limit {
		return s
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
}

// pushbackTrailer returns the trailer of a rejected call, or nil when it carries
// no pushback.
func (c *config) pushbackTrailer(err error) metadata.MD {
	if c.pushback == 0 || !errors.Is(err, groupconc.ErrRejected) {
		return nil
	}
	ms := int64(-1)
	if c.pushback > 0 {
		ms = max(1, c.pushback.Milliseconds())
	}
	return metadata.Pairs(PushbackHeader, strconv.FormatInt(ms, 10))
}

// refuse ends a call the executor did not run. err is what Do or the
// stream's task returned, nil when a RejectionHandler's value completed
// it. A value cannot stand for a call's reply, so that is refused too,
// with the reason "rejection_handler". setTrailer, nil for a client's
// call, sends a rejection's pushback to the peer.
func (c *config) refuse(ctx context.Context, key string, err error, setTrailer func(metadata.MD)) error {
	if err == nil {
		err = &groupconc.RejectedError{GroupKey: key, Reason: "rejection_handler"}
	}
	if tr := c.pushbackTrailer(err); tr != nil && setTrailer != nil {
		setTrailer(tr)
	}
	return toStatus(ctx, err)
}
