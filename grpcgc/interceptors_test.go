package grpcgc_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// call runs a call of checkMethod with md through an interceptor of e.
// The call's handler, or what sends it, is handler.
type call func(e *groupconc.GroupExecutor, ctx context.Context, md metadata.MD, handler func() error) error

// eachInterceptor runs test in a synctest bubble for each of the four
// interceptors made with opts. Each is called directly, with a handler or
// an invoker that sends nothing. So the calls need no network, and
// synctest.Wait shows that a call has its place in the line. Over a
// network nothing shows it: a call is counted in Waiting a moment before.
func eachInterceptor(t *testing.T, test func(t *testing.T, c call), opts ...grpcgc.Option) {
	t.Helper()
	opts = append([]grpcgc.Option{grpcgc.WithKeyFunc(func(context.Context, string) string { return checkMethod })}, opts...)
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
				var ended error // the stream's end, which RecvMsg would return
				_, err := grpcgc.StreamClientInterceptor(e, opts...)(metadata.NewOutgoingContext(ctx, md), &grpc.StreamDesc{}, cc, checkMethod,
					func(_ context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
						ended = handler()
						for _, o := range opts { // the stream ends, as gRPC tells
							if f, ok := o.(grpc.OnFinishCallOption); ok {
								f.OnFinish(ended)
							}
						}
						return nil, nil
					})
				if err == nil {
					err = ended
				}
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
				test(t, c(cc))
			})
		})
	}
}

// The priority and cost that a call's metadata names reach its task.
func TestThePriorityAndCostInTheMetadataReachTheTask(t *testing.T) {
	eachInterceptor(t, priorityAndCost, grpcgc.WithPriorityFromMetadata("x-priority"), grpcgc.WithCostFromMetadata("x-cost"))
}

// The priority and cost that WithPriorityFunc and WithCostFunc give reach
// the task. These read the metadata too.
func TestThePriorityAndCostOfFuncsReachTheTask(t *testing.T) {
	priority := map[string]groupconc.Priority{"high": groupconc.PriorityHigh, "low": groupconc.PriorityLow}
	eachInterceptor(t, priorityAndCost,
		grpcgc.WithPriorityFunc(func(ctx context.Context, _ string) groupconc.Priority {
			return priority[mdValue(ctx, "x-priority")]
		}),
		grpcgc.WithCostFunc(func(ctx context.Context, _ string) int {
			n, _ := strconv.Atoi(mdValue(ctx, "x-cost"))
			return n
		}))
}

// mdValue returns the first value of key in ctx's metadata: a server's
// incoming, or else a client's outgoing.
func mdValue(ctx context.Context, key string) string {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		md, _ = metadata.FromOutgoingContext(ctx)
	}
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// holdPermits makes a call through c that holds its permits until the
// func it returns is called. That func returns the call's error.
func holdPermits(t *testing.T, e *groupconc.GroupExecutor, c call) func() error {
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- c(e, t.Context(), nil, func() error { <-release; return nil }) }()
	synctest.Wait()
	return func() error {
		close(release)
		return <-done
	}
}

// A call that does not run ends with the status that toStatus's rules
// give: Unavailable for a group shut down or evicted while the call waits,
// InvalidArgument for a cost the executor refuses.
func TestACallThatDoesNotRunEndsWithItsStatus(t *testing.T) {
	for name, end := range map[string]func(*groupconc.GroupExecutor){
		"ShutdownGroup": func(e *groupconc.GroupExecutor) { e.ShutdownGroup(checkMethod) },
		"EvictGroup":    func(e *groupconc.GroupExecutor) { e.EvictGroup(checkMethod) },
	} {
		t.Run(name, func(t *testing.T) {
			eachInterceptor(t, func(t *testing.T, c call) {
				e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1))
				first := holdPermits(t, e, c)
				second := make(chan error, 1)
				go func() { second <- c(e, t.Context(), nil, func() error { return nil }) }()
				synctest.Wait()
				end(e)
				err := <-second
				assert.Equal(t, codes.Unavailable, status.Code(err), "got %v", err)
				_ = first() // end cancelled it as it ran: its status is not the point here
			})
		})
	}
	eachInterceptor(t, func(t *testing.T, c call) {
		e := build(t, groupconc.NewPolicyBuilder())
		err := c(e, t.Context(), nil, func() error { return nil })
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "got %v", err)
		assert.ErrorIs(t, err, groupconc.ErrInvalidTask)
	}, grpcgc.WithCostFunc(func(context.Context, string) int { return -1 }))
}

// A RejectionHandler's value is the reply of a unary call it turned away.
func TestARejectionHandlersValueIsTheUnaryReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		standIn := func(context.Context, *groupconc.Rejection) (any, error) { return "stand-in", nil }
		e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionHandler(standIn))
		intercept := grpcgc.UnaryServerInterceptor(e)
		info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
		release := make(chan struct{})
		go intercept(t.Context(), nil, info, func(context.Context, any) (any, error) { <-release; return "ran", nil })
		synctest.Wait()
		resp, err := intercept(t.Context(), nil, info, func(context.Context, any) (any, error) { return "ran", nil })
		require.NoError(t, err)
		assert.Equal(t, "stand-in", resp)
		close(release)
		synctest.Wait()
	})
}

// The pushback is whole milliseconds, at least one, or -1 for "do not
// retry". A server stream sets it as its trailer.
func TestThePushbackIsWholeMilliseconds(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Nanosecond: "1", time.Microsecond: "1", 1500 * time.Microsecond: "1", 2 * time.Second: "2000", -time.Second: "-1"} {
		synctest.Test(t, func(t *testing.T) {
			e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
			intercept := grpcgc.StreamServerInterceptor(e, grpcgc.WithRetryPushback(d))
			info := &grpc.StreamServerInfo{FullMethod: checkMethod}
			release := make(chan struct{})
			go intercept(nil, ctxStream{ctx: t.Context()}, info, func(any, grpc.ServerStream) error { <-release; return nil })
			synctest.Wait()
			ss := ctxStream{ctx: t.Context(), trailer: new(metadata.MD)}
			err := intercept(nil, ss, info, func(any, grpc.ServerStream) error { return nil })
			assert.Equal(t, codes.ResourceExhausted, status.Code(err))
			assert.Equal(t, []string{want}, ss.trailer.Get(grpcgc.PushbackHeader), "pushback %v", d)
			close(release)
			synctest.Wait()
		})
	}
}

// WithSubmitOptions reaches the task: with Block and MaxWait a call waits
// for a queue slot and is turned away when MaxWait passes, where without
// them it would be turned away at once.
func TestTheSubmitOptionsReachTheTask(t *testing.T) {
	eachInterceptor(t, func(t *testing.T, c call) {
		e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
		first := holdPermits(t, e, c)
		start := time.Now()
		err := c(e, t.Context(), nil, func() error { return nil })
		assert.Equal(t, groupconc.ReasonWaitTimeout, assertRejected(t, err, codes.ResourceExhausted).Reason)
		assert.Equal(t, time.Second, time.Since(start), "it waited MaxWait")
		assert.NoError(t, first())
	}, grpcgc.WithSubmitOptions(groupconc.SubmitOptions{Block: true, MaxWait: time.Second}))
}

// A call that fails, a stream that ends in an error, is a failed task.
func TestAFailedCallIsAFailedTask(t *testing.T) {
	eachInterceptor(t, func(t *testing.T, c call) {
		e := build(t, groupconc.NewPolicyBuilder())
		failed := status.Error(codes.NotFound, "no such thing")
		assert.Equal(t, codes.NotFound, status.Code(c(e, t.Context(), nil, func() error { return failed })))
		assert.NoError(t, c(e, t.Context(), nil, func() error { return nil }))
		st, _ := e.GroupStats(checkMethod)
		assert.EqualValues(t, 1, st.Failed)
		assert.EqualValues(t, 1, st.Succeeded)
	})
}

// ctxStream is a server stream of which only the context and the
// trailer are used.
type ctxStream struct {
	grpc.ServerStream
	ctx     context.Context
	trailer *metadata.MD // the trailer set, if not nil
}

func (s ctxStream) Context() context.Context { return s.ctx }

func (s ctxStream) SetTrailer(md metadata.MD) {
	if s.trailer != nil {
		*s.trailer = metadata.Join(*s.trailer, md)
	}
}

// priorityAndCost sends "first", then "low", "" and "high" through c, each
// of cost 2 (x-cost) and of its own priority (x-priority), each once the
// one before has its place (synctest.Wait). It checks that they start in
// priority order, one at a time.
func priorityAndCost(t *testing.T, c call) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2))
	entered := make(chan string, 4)
	release := make(chan struct{})
	done := make(chan error, 4)
	send := func(id, priority string) {
		md := metadata.Pairs("x-cost", "2") // each call takes both permits
		if priority != "" {
			md.Set("x-priority", priority)
		}
		go func() {
			done <- c(e, t.Context(), md, func() error {
				entered <- id
				<-release
				return nil
			})
		}()
		synctest.Wait()
	}
	send("first", "")
	assert.Equal(t, "first", <-entered)
	for _, p := range []string{"low", "", "high"} { // each waits behind the one before
		send(p, p)
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

// A call whose context ended, and that returns the status saying so, is a
// cancelled task, not a failed one. The status comes back as it was. The
// same status while the context lives is a failed task.
func TestACallThatEndsWithItsEndedContextsStatusIsACancelledTask(t *testing.T) {
	eachInterceptor(t, func(t *testing.T, c call) {
		e := build(t, groupconc.NewPolicyBuilder())
		for _, code := range []codes.Code{codes.Canceled, codes.DeadlineExceeded} {
			ctx, cancel := context.WithCancel(t.Context())
			ended := status.Error(code, "the call's context ended")
			err := c(e, ctx, nil, func() error {
				cancel()
				return ended
			})
			assert.Equal(t, ended, err, "%v", code)
		}
		canceled := status.Error(codes.Canceled, "the server said so")
		assert.Equal(t, canceled, c(e, t.Context(), nil, func() error { return canceled }))
		st, _ := e.GroupStats(checkMethod)
		assert.EqualValues(t, 2, st.Cancelled)
		assert.EqualValues(t, 1, st.Failed)
	})
}
