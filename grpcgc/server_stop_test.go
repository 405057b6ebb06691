package grpcgc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// Stop ends a running stream and the calls that wait for its permit. It
// returns, and each call ends as a cancelled task. A waiting call handed
// the permit as Stop begins may start, but its context is ending too.
func TestServerStopEndsRunningAndWaitingCalls(t *testing.T) {
	b, sub, done := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(1))
	entered := make(chan string, 10)
	untilDone := func(ctx context.Context, name string) error {
		entered <- name
		<-ctx.Done()
		return ctx.Err()
	}
	s, addr := serveDuplex(t, &duplex{
		full: func(s testgrpc.TestService_FullDuplexCallServer) error {
			return untilDone(s.Context(), "stream")
		},
		empty: func(ctx context.Context) error { return untilDone(ctx, "unary") },
	},
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, oneGroup)),
		grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e, oneGroup)))
	cc := dial(t, addr)
	running := open(t, t.Context(), cc, "running")
	<-sub
	<-entered
	waiting := open(t, t.Context(), cc, "waiting")
	<-sub
	unary := make(chan error, 1)
	go func() { unary <- empty(t.Context(), cc) }()
	<-sub

	s.Stop()
	for range 3 {
		r := <-done
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "%v", r.Err)
	}
	_, err := running.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err), "got %v", err)
	_, err = waiting.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err), "got %v", err)
	assert.Equal(t, codes.Unavailable, status.Code(<-unary))
	st := e.Stats()
	assert.Zero(t, st.Running)
	assert.Zero(t, st.Waiting)
}

// GracefulStop waits for the running stream and for the calls that wait
// for its permit. They run in turn as the permit comes back, and
// GracefulStop returns once the last has ended.
func TestServerGracefulStopLetsWaitingCallsRun(t *testing.T) {
	b, sub, done := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(1))
	entered := make(chan string, 10)
	s, addr := serveDuplex(t, &duplex{
		full:  echo(entered),
		empty: func(context.Context) error { entered <- "unary"; return nil },
	},
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, oneGroup)),
		grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e, oneGroup)))
	cc := dial(t, addr)
	running := open(t, t.Context(), cc, "running")
	<-sub
	require.Equal(t, "running", <-entered)
	waiting := open(t, t.Context(), cc, "waiting")
	<-sub
	unary := make(chan error, 1)
	go func() { unary <- empty(t.Context(), cc) }()
	<-sub

	stopped := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(stopped)
	}()
	require.NoError(t, waiting.CloseSend())
	require.NoError(t, running.CloseSend())
	// The unary call and the waiting stream run in either order.
	got := map[string]bool{<-entered: true, <-entered: true}
	assert.Equal(t, map[string]bool{"unary": true, "waiting": true}, got)
	<-stopped
	assert.NoError(t, <-unary)
	for range 3 {
		assert.Equal(t, groupconc.StatusSuccess, (<-done).Status)
	}
	assert.Zero(t, e.Stats().Running)
}
