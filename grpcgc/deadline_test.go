package grpcgc_test

import (
	"context"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// A call whose deadline passes while it runs, as against a backend that
// hangs, ends with DeadlineExceeded through the client interceptors, as it
// does without them, not with Canceled. The call runs in the task's
// context, and gRPC derives a context of its own from it.
func TestAClientCallWhoseDeadlinePassesEndsDeadlineExceeded(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder())
	g := newGate()
	c := clientOf(t, e, g)

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := check(ctx, c, "hangs")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "got %v", err)

	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	require.NoError(t, err)
	_, err = w.Recv() // the server sends no more
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "got %v", err)
}

// A handler that derives a context from its call's, as any call it makes
// downstream does, sees the call's deadline, here a server's bound on
// every call, as DeadlineExceeded.
func TestAHandlersDerivedContextEndsWithTheCallsDeadline(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder())
	seen := make(chan error, 1)
	bound := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		return handler(ctx, req)
	}
	c := serve(t, &health{check: func(ctx context.Context, _ string) error {
		d, stop := context.WithCancel(ctx)
		defer stop()
		<-d.Done()
		seen <- d.Err()
		return status.FromContextError(d.Err()).Err()
	}}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(bound, grpcgc.UnaryServerInterceptor(e))})
	err := check(t.Context(), c, "")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "got %v", err)
	assert.ErrorIs(t, <-seen, context.DeadlineExceeded)
}
