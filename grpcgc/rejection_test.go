package grpcgc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// A RejectionHandler's error with a gRPC status of its own reaches the
// client with that status, not as Internal.
func TestARejectionHandlersStatusReachesTheClient(t *testing.T) {
	h := func(context.Context, *groupconc.Rejection) (any, error) {
		return nil, status.Error(codes.Unavailable, "maintenance, try b")
	}
	e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionHandler(h))
	g := newGate()
	c := serve(t, &health{check: g.hold}, []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e))})
	held := make(chan error, 1)
	go func() { held <- check(t.Context(), c, "held") }()
	<-g.entered
	err := check(t.Context(), c, "second")
	assert.Equal(t, codes.Unavailable, status.Code(err), "got %v", err)
	assert.Equal(t, "maintenance, try b", status.Convert(err).Message())
	close(g.open)
	assert.NoError(t, <-held)
}
