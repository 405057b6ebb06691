package grpcgc_test

import (
	"context"
	"errors"
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

// clientInterceptors are the client interceptors on e, as dial options.
func clientInterceptors(e *groupconc.GroupExecutor, opts ...grpcgc.Option) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithUnaryInterceptor(grpcgc.UnaryClientInterceptor(e, opts...)),
		grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(e, opts...)),
	}
}

// A call on a closed ClientConn fails at once with grpc-go's own error, as
// it does without the interceptors. It is never a task. It does not wait
// for permits, nor is it refused with ResourceExhausted, which a caller
// would retry. Here another connection to the same target holds the
// group's one permit, and no call may wait.
func TestACallOnAClosedClientConnFailsAtOnceAndIsNoTask(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	g := newGate()
	_, addr := serveDuplex(t, &duplex{empty: func(ctx context.Context) error { return g.hold(ctx, "held") }})
	open := dial(t, addr, clientInterceptors(e)...)
	closed := dial(t, addr, clientInterceptors(e)...)
	require.Equal(t, open.Target(), closed.Target(), "one group")
	held := make(chan error, 1)
	go func() { held <- empty(t.Context(), open) }()
	<-g.entered
	require.NoError(t, closed.Close())

	for name, call := range map[string]func(context.Context, *grpc.ClientConn) error{"unary": empty, "stream": fullDuplex} {
		err := call(t.Context(), closed)
		assert.Equal(t, codes.Canceled, status.Code(err), "%s: got %v", name, err)
		assert.False(t, errors.Is(err, groupconc.ErrRejected), "%s: a rejection", name)
	}
	assert.Equal(t, uint64(1), e.Stats().Submitted, "tasks: the held call alone")
	close(g.open)
	assert.NoError(t, <-held)
}

// cc.Close ends the calls in flight with grpc-go's Canceled status. They
// count FAILED, since their contexts did not end. A call that waits for a
// permit then goes on waiting, as gRPC gives no notice of the close. It
// runs once it holds the permit, and fails the same way. Every permit is
// back by the time the calls return.
func TestCallsThatCCCloseEndsAreFailedTasksWithCanceled(t *testing.T) {
	b, sub, done := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(1))
	entered := make(chan struct{}, 4)
	_, addr := serveDuplex(t, &duplex{
		empty: func(ctx context.Context) error {
			entered <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		},
		full: func(s testgrpc.TestService_FullDuplexCallServer) error {
			entered <- struct{}{}
			<-s.Context().Done()
			return s.Context().Err()
		},
	})
	stream := grpcgc.WithKeyFunc(func(_ context.Context, method string) string { return method })
	cc := dial(t, addr, clientInterceptors(e, stream)...)
	errs := make(chan error, 4)
	go func() { errs <- empty(t.Context(), cc) }()
	go func() { errs <- fullDuplex(t.Context(), cc) }()
	for range 2 {
		<-sub
		<-entered
	}
	// Each waits for the permit of the call of its kind.
	go func() { errs <- empty(t.Context(), cc) }()
	go func() { errs <- fullDuplex(t.Context(), cc) }()
	for range 2 {
		<-sub
	}
	require.NoError(t, cc.Close())
	for range 4 {
		err := <-errs
		assert.Equal(t, codes.Canceled, status.Code(err), "got %v", err)
		r := <-done
		assert.Equal(t, groupconc.StatusFailed, r.Status, "%v", r.Err)
	}
	st := e.Stats()
	assert.Zero(t, st.Running)
	assert.Zero(t, st.Waiting)
	assert.Equal(t, uint64(4), st.Failed)
}
