package grpcgc_test

import (
	"context"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A RejectionHandler may run a turned-away call with a context of its own
// that never ends. A call whose client has gone and whose handler then
// says Canceled returns, rather than wait for that context to end.
func TestACallRunWithAContextThatNeverEndsReturns(t *testing.T) {
	run := func(ctx context.Context, r *groupconc.Rejection) (any, error) {
		return r.Run(context.Background())
	}
	e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionHandler(run))
	intercept := grpcgc.UnaryServerInterceptor(e)
	info := &grpc.UnaryServerInfo{FullMethod: "/pkg.S/M"}

	hold, held := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := intercept(t.Context(), nil, info, func(context.Context, any) (any, error) {
			close(held)
			<-hold
			return "ok", nil
		})
		first <- err
	}()
	<-held

	gone, cancel := context.WithCancel(t.Context())
	_, err := intercept(gone, nil, info, func(context.Context, any) (any, error) {
		cancel() // the client goes away as the handler runs the call
		return nil, status.Error(codes.Canceled, "the client went away")
	})
	assert.Equal(t, codes.Canceled, status.Code(err))
	close(hold)
	assert.NoError(t, <-first)
}
