package grpcgc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// call runs a call of checkMethod with md through an interceptor of e.
// The call's handler, or what sends it, is handler.
type call func(e *groupconc.GroupExecutor, ctx context.Context, md metadata.MD, handler func() error) error

// The priority and cost that a call's metadata names reach its task,
// through each interceptor. The interceptor is called directly, in a
// synctest bubble, with a handler or an invoker that sends nothing. There,
// synctest.Wait shows that a call has its place in the line. Over a
// network nothing shows it: a call is counted in Waiting a moment before.
func TestThePriorityAndCostInTheMetadataReachTheTask(t *testing.T) {
	opts := []grpcgc.Option{
		grpcgc.WithKeyFunc(func(context.Context, string) string { return checkMethod }),
		grpcgc.WithPriorityFromMetadata("x-priority"), grpcgc.WithCostFromMetadata("x-cost"),
	}
	for name, c := range map[string]func(cc *grpc.ClientConn) call{
		"unary server": func(*grpc.ClientConn) call {
			return func(e *groupconc.GroupExecutor, ctx context.Context, md metadata.MD, handler func() error) error {
				_, err := grpcgc.UnaryServerInterceptor(e, opts...)(metadata.NewIncomingContext(ctx, md), nil,
					&grpc.UnaryServerInfo{FullMethod: checkMethod}, func(context.Context, any) (any, error) { return nil, handler() })
				return err
			}
		},
		"stream server": func(*grpc.ClientConn) call {
			return func(e *groupconc.GroupExecutor, ctx context.Context, md metadata.MD, handler func() error) error {
				return grpcgc.StreamServerInterceptor(e, opts...)(nil, ctxStream{ctx: metadata.NewIncomingContext(ctx, md)},
					&grpc.StreamServerInfo{FullMethod: checkMethod}, func(any, grpc.ServerStream) error { return handler() })
			}
		},
		"unary client": func(cc *grpc.ClientConn) call {
			return func(e *groupconc.GroupExecutor, ctx context.Context, md metadata.MD, handler func() error) error {
				return grpcgc.UnaryClientInterceptor(e, opts...)(metadata.NewOutgoingContext(ctx, md), checkMethod, nil, nil, cc,
					func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return handler() })
			}
		},
		"stream client": func(cc *grpc.ClientConn) call {
			return func(e *groupconc.GroupExecutor, ctx context.Context, md metadata.MD, handler func() error) error {
				_, err := grpcgc.StreamClientInterceptor(e, opts...)(metadata.NewOutgoingContext(ctx, md), &grpc.StreamDesc{}, cc, checkMethod,
					func(_ context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
						err := handler()
						for _, o := range opts { // the stream ends, as gRPC tells
							if f, ok := o.(grpc.OnFinishCallOption); ok {
								f.OnFinish(err)
							}
						}
						return nil, err
					})
				return err
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// A client conn that is never used, but for its target.
				cc, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
				require.NoError(t, err)
				defer cc.Close()
				priorityAndCost(t, c(cc))
			})
		})
	}
}

// ctxStream is a server stream of which only the context is used.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

func priorityAndCost(t *testing.T, intercept call) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2))
	entered := make(chan string, 4)
	release := make(chan struct{})
	done := make(chan error, 4)
	call := func(id, priority string) {
		md := metadata.Pairs("x-cost", "2") // each call takes both permits
		if priority != "" {
			md.Set("x-priority", priority)
		}
		go func() {
			done <- intercept(e, t.Context(), md, func() error {
				entered <- id
				<-release
				return nil
			})
		}()
		synctest.Wait()
	}
	call("first", "")
	assert.Equal(t, "first", <-entered)
	for _, p := range []string{"low", "", "high"} { // each waits behind the one before
		call(p, p)
	}
	st, _ := e.GroupStats(checkMethod)
	assert.Equal(t, 2, st.RunningCost, "x-cost 2")
	assert.Equal(t, 3, st.Waiting)

	var order []string
	for range 3 {
		release <- struct{}{}
		order = append(order, <-entered)
	}
	release <- struct{}{}
	assert.Equal(t, []string{"high", "", "low"}, order, "the start order follows x-priority")
	for range 4 {
		assert.NoError(t, <-done)
	}
}
