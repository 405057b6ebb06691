package grpcgc_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// A handler that calls Do on its interceptor's executor, with its call's
// context, runs it under the call's permits. So does an interceptor
// chained twice on one executor. Here every group has one permit and no
// queue, so a Do that wanted one of its own would be refused.
func TestAHandlerThatCallsDoOnItsExecutorRunsUnderItsCallsPermits(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
	one := grpcgc.WithKeyFunc(func(context.Context, string) string { return "one" })
	inside := func(ctx context.Context) error {
		_, err := groupconc.Do(ctx, e, "one", func(context.Context) (int, error) { return 1, nil }, groupconc.SubmitOptions{})
		return err
	}
	_, addr := serveDuplex(t, &duplex{
		empty: inside,
		full:  func(s testgrpc.TestService_FullDuplexCallServer) error { return inside(s.Context()) },
	},
		grpc.ChainUnaryInterceptor(grpcgc.UnaryServerInterceptor(e, one), grpcgc.UnaryServerInterceptor(e, one)),
		grpc.ChainStreamInterceptor(grpcgc.StreamServerInterceptor(e, one), grpcgc.StreamServerInterceptor(e, one)))
	cc := dial(t, addr)
	assert.NoError(t, empty(t.Context(), cc), "unary")
	assert.ErrorIs(t, fullDuplex(t.Context(), cc), io.EOF, "stream")
	st := e.Stats()
	assert.Equal(t, uint64(6), st.Succeeded, "each call, its inner interceptor's and its Do")
	assert.Zero(t, st.Rejected)
}
