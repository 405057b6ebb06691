package grpcgc

import (
	"context"

	"github.com/kobe/groupconc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// UnaryServerInterceptor returns an interceptor that runs each unary call
// through groupconc.Do on e. The call is keyed by its full method unless
// the options say otherwise. The handler runs on the call's goroutine once
// the call holds its permits. Its context derives from the call's, and
// ShutdownGroup, EvictGroup and Close of e cancel it too.
//
// The interceptor waits as Do waits: until the permits are held, the call
// is turned away, or its context ends. A call turned away never reaches
// the handler. It ends with codes.ResourceExhausted, or codes.Unavailable
// when the global queue was full. The message names the group and the
// reason, and the trailer carries the retry pushback. A call whose client
// cancelled, or whose deadline passed, ends with codes.Canceled or
// codes.DeadlineExceeded. The handler's own response and error are
// returned as they are. A RejectionHandler's value other than nil is the
// response. A nil value refuses the call, with the reason
// "rejection_handler".
//
// A call that waits holds its HTTP/2 stream. So on a server with
// grpc.MaxConcurrentStreams, the waiting calls of one group may hold every
// stream of a connection, and another group's call on it waits in the
// client. Where groups share connections, keep what they may run and
// queue together below that limit.
//
// A panic in the handler goes on up, with the permits given back. grpc-go
// does not recover it, so chain a recovery interceptor before this one.
//
// Two of these interceptors chained on one executor limit a call once:
// the inner one's call runs inside the outer one's task, under its
// permits, and takes none of its own. To limit a call by two separate
// keys, such as its tenant and its method, give each interceptor an
// executor of its own.
func UnaryServerInterceptor(e *groupconc.GroupExecutor, opts ...Option) grpc.UnaryServerInterceptor {
	c := newConfig(opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		key, so, err := c.resolve(ctx, info.FullMethod, md, info.FullMethod)
		if err != nil {
			return nil, err
		}
		ran := false
		resp, err := groupconc.Do(ctx, e, key, func(tctx context.Context) (any, error) {
			ran = true
			resp, err := handler(tctx, req)
			return resp, ended(ctx, tctx, err)
		}, so)
		if ran || err == nil && resp != nil {
			return resp, callResult(err)
		}
		// A nil value of a RejectionHandler is no response.
		return nil, c.refuse(ctx, key, err, func(tr metadata.MD) {
			_ = grpc.SetTrailer(ctx, tr) // fails only if the call is gone
		})
	}
}

// StreamServerInterceptor returns an interceptor that runs each streaming
// call through groupconc.Do on e, as UnaryServerInterceptor does for a
// unary one. The permits are held while the handler runs, that is for the
// whole stream. The handler's stream has the context of Do's fn, so that
// ShutdownGroup, EvictGroup and Close of e cancel it too. They do not wake
// a handler blocked in RecvMsg or SendMsg, which gRPC gives no way to do
// from the server's side: it watches its context as it waits. A value of a
// RejectionHandler cannot stand for a stream. So the call is refused as a
// rejection, with the reason "rejection_handler".
//
// On a server with grpc.UnknownServiceHandler, gRPC runs it for any method
// a client names, so each such full method is a group of the default key.
// Set the policy's IdleGroupTTL, or key the calls with WithKeyFunc.
func StreamServerInterceptor(e *groupconc.GroupExecutor, opts ...Option) grpc.StreamServerInterceptor {
	c := newConfig(opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		md, _ := metadata.FromIncomingContext(ctx)
		key, so, err := c.resolve(ctx, info.FullMethod, md, info.FullMethod)
		if err != nil {
			return err
		}
		// Of type any, so that a handler's value of any type completes the
		// call, to be refused below.
		ran := false
		_, err = groupconc.Do(ctx, e, key, func(tctx context.Context) (any, error) {
			ran = true
			return nil, ended(ctx, tctx, handler(srv, &serverStream{ServerStream: ss, ctx: tctx}))
		}, so)
		if ran {
			return callResult(err)
		}
		return c.refuse(ctx, key, err, ss.SetTrailer)
	}
}

// serverStream is a ServerStream whose context is that of Do's fn.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }
