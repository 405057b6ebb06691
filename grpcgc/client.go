package grpcgc

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
)

// UnaryClientInterceptor returns an interceptor that runs each outbound
// unary call through groupconc.Do on e. The call is keyed by the
// connection's target (cc.Target()) unless the options say otherwise. So
// by default one backend is one group, a bulkhead for it. Use WithKeyFunc
// to key by method instead.
//
// The interceptor waits as Do waits. A call turned away is never sent. Its
// error has a gRPC status, ResourceExhausted or Unavailable as on the
// server, and matches groupconc.ErrRejected through errors.Is. The status
// carries no pushback, since no server sent one. A call whose context ends
// while it waits fails with codes.Canceled or codes.DeadlineExceeded. A
// RejectionHandler's value cannot stand for the reply. So a call it
// completes is refused, with the reason "rejection_handler".
//
// A call on a closed ClientConn goes straight to gRPC, which fails it
// with codes.Canceled. It is no task. cc.Close does not end a call that
// waits for permits, since gRPC gives no notice of it. It waits until it
// holds its permits or its context ends. Then it fails as a call in
// flight does. A call that cc.Close ends gets gRPC's Canceled status,
// yet counts FAILED: its context did not end. CANCELLED stays for a call
// whose own context ended, as on the server. So adapt.FailuresOverload
// reads a close as overload, and adapt.DefaultClassify ignores it.
//
// Give the client interceptors an executor of their own. A call made from
// a handler run by the server interceptors on the same executor takes no
// permits of its own, since its context derives from a task of e. A
// stream there is a task of its own (see StreamClientInterceptor), which
// may wait for permits its handler holds.
func UnaryClientInterceptor(e *groupconc.GroupExecutor, opts ...Option) grpc.UnaryClientInterceptor {
	c := newConfig(opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		if closed(cc) {
			return invoker(ctx, method, req, reply, cc, callOpts...)
		}
		md, _ := metadata.FromOutgoingContext(ctx)
		key, so, err := c.resolve(ctx, method, md, cc.Target())
		if err != nil {
			return err
		}
		// Of type any, so that a handler's value of any type completes the
		// call, to be refused below.
		ran := false
		_, err = groupconc.Do(ctx, e, key, func(tctx context.Context) (any, error) {
			ran = true
			return nil, ended(ctx, tctx, invoker(tctx, method, req, reply, cc, callOpts...))
		}, so)
		if ran {
			return callResult(err)
		}
		return c.refuse(ctx, key, err, nil)
	}
}

// closed reports whether cc is closed. gRPC fails a call on it at once,
// so the interceptors pass it on. It never waits for permits, nor is it
// refused as a busy group's call would be, which a caller might retry.
func closed(cc *grpc.ClientConn) bool {
	return cc.GetState() == connectivity.Shutdown
}

// streams numbers the client streams of every interceptor, so that two
// interceptors on one executor never give two streams one task id.
var streams atomic.Uint64

// StreamClientInterceptor returns an interceptor that limits outbound
// streams, keyed as UnaryClientInterceptor keys calls. A stream holds its
// permits from its start until it ends. It ends when RecvMsg returns an
// error (io.EOF included), when SendMsg fails with an error other than
// io.EOF (which means RecvMsg has the stream's end) or Header fails, when
// its context ends, or when the connection closes, as gRPC tells through
// grpc.OnFinish. When RecvMsg returns the stream's end, the permits are
// already back. After a cancelled context they come back a moment later,
// once the task sees it. A stream that is never read to its end and whose
// context never ends keeps its permits, as it keeps gRPC's own resources.
//
// The stream is a task of e, submitted with groupconc.SubmitWith. The
// task's goroutine holds the permits and waits for the stream's end. The
// interceptor waits until the task holds its permits, is turned away, or
// ctx ends, and only then opens the stream. The stream's context is the
// task's, so ShutdownGroup, EvictGroup and Close of e cancel it too. A
// stream turned away fails as a unary call does. So does one whose task a
// RejectionHandler completed with a value, with the reason
// "rejection_handler". A stream on a closed ClientConn, or one that
// cc.Close ends, goes as a unary call does. If the streamer (the next
// interceptor, or gRPC) panics or calls runtime.Goexit, the task ends
// failed and its permits are back before the panic goes on up.
func StreamClientInterceptor(e *groupconc.GroupExecutor, opts ...Option) grpc.StreamClientInterceptor {
	c := newConfig(opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		if closed(cc) {
			return streamer(ctx, desc, cc, method, callOpts...)
		}
		md, _ := metadata.FromOutgoingContext(ctx)
		key, so, err := c.resolve(ctx, method, md, cc.Target())
		if err != nil {
			return nil, err
		}
		s := &heldStream{caller: ctx, held: make(chan context.Context, 1), ended: make(chan struct{})}
		id := "stream-" + strconv.FormatUint(streams.Add(1), 10)
		h, err := groupconc.SubmitWith(ctx, e, key, id, s.hold, so)
		if err != nil {
			return nil, toStatus(ctx, err)
		}
		s.done = h.Done()
		var tctx context.Context
		select {
		case tctx = <-s.held:
		case <-h.Done():
			// A task that held its permits sent its context before it
			// ended (cancelled as it started, say), and both may be there
			// to see. Then the stream opens in that context, as it would
			// had the context been seen first. The task's end is no
			// refusal, and its error (context.Canceled) no status.
			select {
			case tctx = <-s.held:
			default:
				// Turned away or cancelled before it held its permits. A
				// handler's value cannot stand for a stream.
				return nil, c.refuse(ctx, key, h.Wait().Err, nil)
			}
		}
		// A full slice expression, so that append never writes into the
		// caller's array, which other calls may share.
		callOpts = append(callOpts[:len(callOpts):len(callOpts)], grpc.OnFinish(s.finish))
		// A streamer that panics or calls runtime.Goexit ends the task
		// too, so its permits are back as the panic goes on up.
		returned := false
		defer func() {
			if !returned {
				s.finish(errStreamerUnwound)
			}
		}()
		cs, err := streamer(tctx, desc, cc, method, callOpts...)
		returned = true
		if err != nil {
			s.finish(err) // gRPC calls OnFinish too; finish runs once
			return nil, err
		}
		return cs, nil
	}
}

// errStreamerUnwound is the error of a stream's task when the streamer
// did not return: it panicked, or called runtime.Goexit.
var errStreamerUnwound = errors.New("grpcgc: the streamer did not return (a panic or runtime.Goexit)")

// heldStream is the task that holds a client stream's permits.
type heldStream struct {
	caller context.Context      // the call's context, which the task's derives from
	held   chan context.Context // gets the task's context once it holds its permits
	ended  chan struct{}        // closed when the stream ends
	done   <-chan struct{}      // the task's handle's Done, set before the stream opens
	once   sync.Once
	err    error // the stream's end, set before ended closes
}

// hold is the task's function. It hands over its context and waits for
// the stream's end. Its context ends with the stream's, since the stream
// runs in it. It is of type any, as a unary call's, so that a handler's
// value of any type completes it.
func (s *heldStream) hold(ctx context.Context) (any, error) {
	s.held <- ctx
	select {
	case <-s.ended:
	case <-ctx.Done():
	}
	if err := ctx.Err(); err != nil {
		return nil, err // CANCELLED, whatever the stream said
	}
	return nil, ended(s.caller, ctx, s.err)
}

// finish ends the task with the stream's status. It waits for the task's
// end, so its permits are back once the caller sees the stream's end. The
// task only has to return, so the wait is short.
func (s *heldStream) finish(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.ended)
		<-s.done
	})
}
