package grpcgc_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// clientOf returns a client whose calls go through the client interceptors
// on e, to a server whose Check waits on g and whose Watch sends one
// message and then waits on g.
func clientOf(t *testing.T, e *groupconc.GroupExecutor, g *gate, opts ...grpcgc.Option) healthpb.HealthClient {
	return serve(t, &health{
		check: g.hold,
		watch: func(ctx context.Context, _ string, send func() error) error {
			if err := send(); err != nil {
				return err
			}
			select {
			case <-g.open:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}, nil,
		grpc.WithUnaryInterceptor(grpcgc.UnaryClientInterceptor(e, opts...)),
		grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(e, opts...)),
	)
}

// assertRejected checks that err is a rejection by the client's executor.
func assertRejected(t *testing.T, err error, code codes.Code) *groupconc.RejectedError {
	t.Helper()
	assert.Equal(t, code, status.Code(err), "got %v", err)
	assert.ErrorIs(t, err, groupconc.ErrRejected)
	var re *groupconc.RejectedError
	require.ErrorAs(t, err, &re)
	return re
}

func TestTheClientLimitsUnaryCallsPerTarget(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	g := newGate()
	c := clientOf(t, e, g)
	held := make(chan error, 1)
	go func() { held <- check(t.Context(), c, "held") }()
	<-g.entered

	err := check(t.Context(), c, "second")
	re := assertRejected(t, err, codes.ResourceExhausted)
	assert.Contains(t, re.GroupKey, "127.0.0.1:", "the target")
	assert.Equal(t, groupconc.ReasonGroupQueueFull, re.Reason)
	assert.Equal(t, `grpcgc: call rejected by group "`+re.GroupKey+`": group_queue_full`, status.Convert(err).Message())

	close(g.open)
	assert.NoError(t, <-held)
	assert.NoError(t, check(t.Context(), c, "third"))
	assert.Equal(t, 1, g.most("held"))
	assert.Zero(t, g.most("second"), "the rejected call reached the server")
}

func TestAClientCallCancelledWhileItWaitsIsNeverSent(t *testing.T) {
	b, sub, done := watched()
	e := build(t, b)
	g := newGate()
	c := clientOf(t, e, g)
	held := make(chan error, 1)
	go func() { held <- check(t.Context(), c, "held") }()
	<-sub
	<-g.entered

	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan error, 1)
	go func() { waiting <- check(ctx, c, "waiting") }()
	<-sub
	cancel()
	err := <-waiting
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, groupconc.StatusCancelled, (<-done).Status)
	close(g.open)
	assert.NoError(t, <-held)
	assert.Zero(t, g.most("waiting"))
}

func TestAClientStreamHoldsItsPermitsUntilItEnds(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	g := newGate()
	c := clientOf(t, e, g)
	first, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = first.Recv()
	require.NoError(t, err)

	_, err = c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	assertRejected(t, err, codes.ResourceExhausted)
	assertRejected(t, check(t.Context(), c, "unary"), codes.ResourceExhausted)

	close(g.open)
	_, err = first.Recv()
	assert.ErrorIs(t, err, io.EOF)
	// The permit is back once Recv has returned the stream's end.
	assert.Zero(t, e.Stats().Running)
	second, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = second.Recv()
	assert.NoError(t, err)
	_, err = second.Recv()
	assert.ErrorIs(t, err, io.EOF)
}

func TestAClientStreamGivesBackItsPermitsWhenItsContextEnds(t *testing.T) {
	b, _, done := watched()
	e := build(t, b.DefaultQueueThresholdPerGroup(0))
	g := newGate()
	c := clientOf(t, e, g)
	for range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		_, err = w.Recv()
		require.NoError(t, err)
		cancel()
		_, err = w.Recv()
		assert.Equal(t, codes.Canceled, status.Code(err))
		assert.False(t, errors.Is(err, groupconc.ErrRejected))
		// The task sees its context end, maybe after Recv returned.
		assert.Equal(t, groupconc.StatusCancelled, (<-done).Status)
	}
	assert.Zero(t, e.Stats().Running)
	assert.Equal(t, uint64(3), e.Stats().Cancelled)
}

func TestAClientStreamOfAClosedExecutorIsUnavailable(t *testing.T) {
	e := groupconc.New(nil)
	require.NoError(t, e.Close())
	c := clientOf(t, e, newGate())
	_, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.ErrorIs(t, err, groupconc.ErrClosed)
	err = check(t.Context(), c, "")
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.ErrorIs(t, err, groupconc.ErrClosed)
}

func TestTheClientKeysByMethodWhenAsked(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	g := newGate()
	c := clientOf(t, e, g, grpcgc.WithKeyFunc(func(_ context.Context, method string) string { return method }))
	w, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	require.NoError(t, err)
	_, err = c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	re := assertRejected(t, err, codes.ResourceExhausted)
	assert.Equal(t, "/grpc.health.v1.Health/Watch", re.GroupKey)

	// Check is a group of its own, so it runs while the stream holds Watch's.
	held := make(chan error, 1)
	go func() { held <- check(t.Context(), c, "check") }()
	<-g.entered
	close(g.open)
	assert.NoError(t, <-held)
	_, err = w.Recv()
	assert.ErrorIs(t, err, io.EOF)
}
