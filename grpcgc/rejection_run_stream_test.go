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

// A RejectionHandler may run a turned-away stream through Rejection.Run
// with a context of its own, one that can end but does not end with the
// call: here a cancel of its own, called once Run returns. When the
// client goes away, the handler's Send fails with gRPC's Canceled, and
// the handler returns it. The interceptor returns that status at once. It
// used to wait for the handler's context to end, which it never did before
// Run returned: the call, its goroutine and the executor's Shutdown hung.
func TestAStreamRunWithAContextOfItsOwnReturnsWhenItsClientGoesAway(t *testing.T) {
	owns := make(chan context.CancelFunc, 1)
	run := func(ctx context.Context, r *groupconc.Rejection) (any, error) {
		own, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		owns <- cancel
		return r.Run(own)
	}
	b, _, done := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionHandler(run))
	one := grpcgc.WithKeyFunc(func(context.Context, string) string { return "one" })
	g := newGate()
	sent := make(chan struct{}, 1)
	returned := make(chan error, 1)
	// outer tells when the interceptor under test has returned.
	outer := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		err := handler(srv, ss)
		returned <- err
		return err
	}
	c := serve(t, &health{check: g.hold, watch: func(_ context.Context, _ string, send func() error) error {
		for {
			if err := send(); err != nil {
				return err // gRPC's Canceled, once the client has gone
			}
			select {
			case sent <- struct{}{}:
			default:
			}
		}
	}}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(grpcgc.UnaryServerInterceptor(e, one)),
		grpc.ChainStreamInterceptor(outer, grpcgc.StreamServerInterceptor(e, one)),
	})

	held := make(chan error, 1)
	go func() { held <- check(t.Context(), c, "held") }() // the group's one permit
	<-g.entered
	ctx, cancel := context.WithCancel(t.Context())
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv() // turned away, and run by the handler
	require.NoError(t, err)
	<-sent
	own := <-owns
	cancel() // the client goes away

	select {
	case err = <-returned:
		assert.Equal(t, codes.Canceled, status.Code(err), "got %v", err)
	case <-time.After(10 * time.Second):
		t.Error("hung: the interceptor waits for the end of the handler's own context")
		own() // lets it return, so the test can end
		<-returned
	}
	// The handler ran in a context that has not ended: its Canceled is an
	// error of its own, as under a context that never ends.
	r := <-done
	assert.Equal(t, groupconc.StatusFailed, r.Status, "the stream run by the handler: %v", r.Err)
	assert.Equal(t, codes.Canceled, status.Code(r.Err))
	close(g.open)
	assert.NoError(t, <-held)
	assert.Equal(t, groupconc.StatusSuccess, (<-done).Status, "the held call")
}
