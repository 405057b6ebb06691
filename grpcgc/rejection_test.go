package grpcgc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
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

// A RejectionHandler's value of any type, where it cannot stand for the
// reply, refuses the call with the reason "rejection_handler": a stream on
// the server, a unary call and a stream on the client.
func TestARejectionHandlersValueOfAnyTypeIsRefusedWhereNoReplyCanBeIt(t *testing.T) {
	cached := func(context.Context, *groupconc.Rejection) (any, error) { return "cached", nil }
	one := grpcgc.WithKeyFunc(func(context.Context, string) string { return "one" })
	for _, side := range []string{"server", "client"} {
		t.Run(side, func(t *testing.T) {
			e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionHandler(cached))
			g := newGate()
			watch := func(ctx context.Context, _ string, send func() error) error {
				<-g.open
				return send()
			}
			var c healthpb.HealthClient
			if side == "server" {
				c = serve(t, &health{check: g.hold, watch: watch}, []grpc.ServerOption{
					grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, one)),
					grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e, one)),
				})
			} else {
				c = serve(t, &health{check: g.hold, watch: watch}, nil,
					grpc.WithUnaryInterceptor(grpcgc.UnaryClientInterceptor(e, one)),
					grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(e, one)))
			}
			held := make(chan error, 1)
			go func() { held <- check(t.Context(), c, "held") }()
			<-g.entered
			if side == "client" {
				re := assertRejected(t, check(t.Context(), c, "second"), codes.ResourceExhausted)
				assert.Equal(t, "rejection_handler", re.Reason, "a unary call")
			}
			w, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
			if err == nil {
				_, err = w.Recv()
			}
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "a stream: %v", err)
			assert.Contains(t, status.Convert(err).Message(), "rejection_handler")
			close(g.open)
			assert.NoError(t, <-held)
		})
	}
}
