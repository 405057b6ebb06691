package grpcgc_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// A client stream that fails to open, here in an interceptor chained
// after grpcgc's that never calls gRPC, so that gRPC never tells its end,
// fails with that error and gives back its permits at once. Its task is a
// failed one, and the next stream of its group opens.
func TestAClientStreamThatFailsToOpenGivesBackItsPermits(t *testing.T) {
	b, _, done := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
	// Before build's Shutdown: ends a task that still holds a stream's
	// permits, so that a failure here does not hang the test.
	t.Cleanup(func() { _ = e.Close() })
	refused := status.Error(codes.Aborted, "refused before it was sent")
	refuser := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if md, _ := metadata.FromOutgoingContext(ctx); len(md.Get("x-refuse")) > 0 {
			return nil, refused
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
	c := serve(t, &health{}, nil, grpc.WithChainStreamInterceptor(grpcgc.StreamClientInterceptor(e), refuser))
	for range 3 {
		ctx := metadata.AppendToOutgoingContext(t.Context(), "x-refuse", "yes")
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		assert.Nil(t, w, "the stream")
		assert.Equal(t, codes.Aborted, status.Code(err), "got %v", err)
		assert.Equal(t, "refused before it was sent", status.Convert(err).Message())
		require.Zero(t, e.Stats().Running, "the permits are back when Watch returns")
		r := <-done
		assert.Equal(t, groupconc.StatusFailed, r.Status)
		assert.ErrorIs(t, r.Err, refused)
	}
	w, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	require.NoError(t, err)
	_, err = w.Recv()
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, groupconc.StatusSuccess, (<-done).Status)
}

// A call whose context has already ended, made through the client
// interceptors of a closed executor, is refused for the closed executor:
// Unavailable, matching groupconc.ErrClosed, not a context's status.
func TestAClosedExecutorIsUnavailableToACallWhoseContextHasEnded(t *testing.T) {
	e := groupconc.New(nil)
	require.NoError(t, e.Close())
	c := clientOf(t, e, newGate())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := check(ctx, c, "")
	assert.Equal(t, codes.Unavailable, status.Code(err), "a unary call: %v", err)
	assert.ErrorIs(t, err, groupconc.ErrClosed)
	_, err = c.Watch(ctx, &healthpb.HealthCheckRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err), "a stream: %v", err)
	assert.ErrorIs(t, err, groupconc.ErrClosed)
}

// Two stream interceptors on one executor number their streams together:
// no two streams are one task id in listeners and logs.
func TestStreamsOfTwoInterceptorsOnOneExecutorHaveTheirOwnIDs(t *testing.T) {
	ids := make(chan string, 4)
	e := build(t, groupconc.NewPolicyBuilder().TaskLifecycleListener(groupconc.ListenerFuncs{
		Submitted: func(_, id string) { ids <- id },
	}))
	seen := map[string]bool{}
	for range 2 {
		c := serve(t, &health{}, nil, grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(e)))
		w, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		for err == nil {
			_, err = w.Recv()
		}
		require.ErrorIs(t, err, io.EOF)
		id := <-ids
		assert.False(t, seen[id], "the id %q again", id)
		seen[id] = true
	}
}
