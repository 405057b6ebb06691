package grpcgc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// A priority or cost in the metadata that is not one fails the call with
// InvalidArgument, a message that names it, and no pushback, whichever of
// the four interceptors reads it. No handler runs, and the client's call
// is never sent.
func TestABadPriorityOrCostFailsEveryKindOfCallWithInvalidArgument(t *testing.T) {
	md := grpcgc.WithPriorityFromMetadata("x-priority")
	cost := grpcgc.WithCostFromMetadata("x-cost")
	for _, side := range []string{"server", "client"} {
		t.Run(side, func(t *testing.T) {
			e := build(t, groupconc.NewPolicyBuilder())
			var ran atomic.Int32
			h := &health{
				check: func(context.Context, string) error { ran.Add(1); return nil },
				watch: func(_ context.Context, _ string, send func() error) error { ran.Add(1); return send() },
			}
			var c healthpb.HealthClient
			if side == "server" {
				c = serve(t, h, []grpc.ServerOption{
					grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, md, cost)),
					grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e, md, cost)),
				})
			} else {
				c = serve(t, h, nil,
					grpc.WithUnaryInterceptor(grpcgc.UnaryClientInterceptor(e, md, cost)),
					grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(e, md, cost)))
			}
			for _, tc := range []struct {
				md  []string
				msg string
			}{
				{[]string{"x-priority", "urgent"}, `grpcgc: metadata x-priority is "urgent", not a priority (highest, high, normal, low or lowest)`},
				{[]string{"x-cost", "two"}, `grpcgc: metadata x-cost is "two", not a cost (a number from 0)`},
				{[]string{"x-cost", "-1"}, `grpcgc: metadata x-cost is "-1", not a cost (a number from 0)`},
				{[]string{"x-cost", "+1"}, `grpcgc: metadata x-cost is "+1", not a cost (a number from 0)`},
			} {
				ctx := metadata.AppendToOutgoingContext(t.Context(), tc.md...)
				var trailer metadata.MD
				_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
				assertBadValue(t, err, tc.msg, "unary %v", tc.md)
				assert.Empty(t, trailer.Get(grpcgc.PushbackHeader), "unary %v", tc.md)

				w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
				if err == nil {
					_, err = w.Recv()
					assert.Empty(t, w.Trailer().Get(grpcgc.PushbackHeader), "stream %v", tc.md)
				}
				assertBadValue(t, err, tc.msg, "stream %v", tc.md)
			}
			assert.Zero(t, ran.Load(), "handlers run")
			assert.Zero(t, e.Stats().Submitted, "tasks submitted")
		})
	}
}

// assertBadValue checks that err is the InvalidArgument of a bad metadata
// value, with the message msg, and no rejection.
func assertBadValue(t *testing.T, err error, msg string, args ...any) {
	t.Helper()
	assert.Equal(t, codes.InvalidArgument, status.Code(err), args...)
	assert.Equal(t, msg, status.Convert(err).Message(), args...)
	assert.False(t, errors.Is(err, groupconc.ErrRejected), args...)
}

// A nil Option is skipped: the options around it still count.
func TestANilOptionIsSkipped(t *testing.T) {
	b, sub, _ := watched()
	e := build(t, b)
	byTenant := grpcgc.WithKeyFromMetadata("x-tenant")
	c := serve(t, &health{}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, nil, byTenant, nil)),
	})
	assert.NoError(t, check(tenant(t.Context(), "acme"), c, ""))
	assert.Equal(t, "acme", <-sub)
}
