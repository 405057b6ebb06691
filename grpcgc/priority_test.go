package grpcgc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// The priority and cost that a call's metadata names reach its task. The
// interceptor is called directly, in a synctest bubble. There,
// synctest.Wait shows that a call has its place in the line. Over a
// network nothing shows it: a call is counted in Waiting a moment before.
func TestThePriorityAndCostInTheMetadataReachTheTask(t *testing.T) {
	opts := []grpcgc.Option{grpcgc.WithPriorityFromMetadata("x-priority"), grpcgc.WithCostFromMetadata("x-cost")}
	// Each runs a call of checkMethod with ctx through an interceptor.
	for name, intercept := range map[string]func(e *groupconc.GroupExecutor, ctx context.Context, handler func() error) error{
		"unary": func(e *groupconc.GroupExecutor, ctx context.Context, handler func() error) error {
			_, err := grpcgc.UnaryServerInterceptor(e, opts...)(ctx, nil, &grpc.UnaryServerInfo{FullMethod: checkMethod},
				func(context.Context, any) (any, error) { return nil, handler() })
			return err
		},
		"stream": func(e *groupconc.GroupExecutor, ctx context.Context, handler func() error) error {
			return grpcgc.StreamServerInterceptor(e, opts...)(nil, ctxStream{ctx: ctx}, &grpc.StreamServerInfo{FullMethod: checkMethod},
				func(any, grpc.ServerStream) error { return handler() })
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { priorityAndCost(t, intercept) })
		})
	}
}

// ctxStream is a server stream of which only the context is used.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

func priorityAndCost(t *testing.T, intercept func(*groupconc.GroupExecutor, context.Context, func() error) error) {
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
			done <- intercept(e, metadata.NewIncomingContext(t.Context(), md), func() error {
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
