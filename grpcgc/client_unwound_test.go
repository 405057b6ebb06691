package grpcgc_test

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// unwindKey is the one group of the tests below.
var unwindKey = grpcgc.WithKeyFunc(func(context.Context, string) string { return "backend" })

// unwind panics with "boom" or calls runtime.Goexit, as the outgoing
// metadata x-unwind asks, and does nothing without it.
func unwind(ctx context.Context) {
	md, _ := metadata.FromOutgoingContext(ctx)
	switch v := md.Get("x-unwind"); {
	case len(v) == 0:
	case v[0] == "panic":
		panic("boom")
	case v[0] == "goexit":
		runtime.Goexit()
	}
}

// unwinding returns a context that asks unwind for how.
func unwinding(t *testing.T, how string) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), "x-unwind", how)
}

// recovered runs f and returns what it panicked with.
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// exits runs f on a goroutine of its own and reports whether f ended it
// through runtime.Goexit rather than returning.
func exits(f func()) bool {
	returned := make(chan bool, 1)
	go func() {
		defer func() { returned <- false }()
		f()
		returned <- true
	}()
	return !<-returned
}

// assertUnwound checks that the task of a call that did not return ended
// failed, and that its group has nothing running or waiting: the permit is
// back by the time the panic or runtime.Goexit reaches the caller.
func assertUnwound(t *testing.T, e *groupconc.GroupExecutor, done chan groupconc.GroupResult[any]) groupconc.GroupResult[any] {
	t.Helper()
	st, _ := e.GroupStats("backend")
	require.Zero(t, st.Running, "the permit is back when the call unwinds")
	require.Zero(t, st.Waiting)
	r := <-done
	assert.Equal(t, groupconc.StatusFailed, r.Status)
	return r
}

// A stream interceptor chained after grpcgc's that panics or calls
// runtime.Goexit, in place of opening the stream, ends the stream's task.
// The panic reaches the caller as it was, and the group's one permit is
// back, so the next stream of the group opens.
func TestAClientStreamerThatPanicsOrExitsGivesBackItsPermits(t *testing.T) {
	b, _, done := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
	// Before build's Shutdown: ends a task that still holds the permit, so
	// that a failure here does not hang the test.
	t.Cleanup(func() { _ = e.Close() })
	unwinder := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		unwind(ctx)
		return streamer(ctx, desc, cc, method, opts...)
	}
	c := serve(t, &health{}, nil, grpc.WithChainStreamInterceptor(grpcgc.StreamClientInterceptor(e, unwindKey), unwinder))
	watch := func(ctx context.Context) { _, _ = c.Watch(ctx, &healthpb.HealthCheckRequest{}) }

	for range 2 {
		assert.Equal(t, "boom", recovered(func() { watch(unwinding(t, "panic")) }), "the streamer's panic, unchanged")
		r := assertUnwound(t, e, done)
		assert.ErrorContains(t, r.Err, "the streamer did not return")

		assert.True(t, exits(func() { watch(unwinding(t, "goexit")) }), "Watch returned")
		r = assertUnwound(t, e, done)
		assert.ErrorContains(t, r.Err, "the streamer did not return")
	}

	w, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err, "the next stream gets the permit")
	_, err = w.Recv()
	require.NoError(t, err)
	_, err = w.Recv()
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, groupconc.StatusSuccess, (<-done).Status)
	st, _ := e.GroupStats("backend")
	assert.Zero(t, st.Running+st.Waiting, "nothing left in the group")
}

// The same for a unary call, whose invoker runs inside groupconc.Do: a
// panic goes on up as it was, runtime.Goexit ends the caller's goroutine,
// and either way the permit is back for the next call.
func TestAClientInvokerThatPanicsOrExitsGivesBackItsPermits(t *testing.T) {
	b, _, done := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
	t.Cleanup(func() { _ = e.Close() })
	unwinder := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		unwind(ctx)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c := serve(t, &health{}, nil, grpc.WithChainUnaryInterceptor(grpcgc.UnaryClientInterceptor(e, unwindKey), unwinder))

	for range 2 {
		assert.Equal(t, "boom", recovered(func() { _ = check(unwinding(t, "panic"), c, "") }), "the invoker's panic, unchanged")
		assertUnwound(t, e, done)

		assert.True(t, exits(func() { _ = check(unwinding(t, "goexit"), c, "") }), "the call returned")
		assertUnwound(t, e, done)
	}

	require.NoError(t, check(t.Context(), c, ""), "the next call gets the permit")
	assert.Equal(t, groupconc.StatusSuccess, (<-done).Status)
	st, _ := e.GroupStats("backend")
	assert.Zero(t, st.Running+st.Waiting, "nothing left in the group")
}
