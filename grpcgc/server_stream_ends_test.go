package grpcgc_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// answer answers each message of s until the client half-closes.
func answer(s testgrpc.TestService_FullDuplexCallServer) error {
	for {
		if _, err := s.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
}

// echo is a FullDuplexCall handler. It sends the stream's x-id on entered,
// then answers each message until the client half-closes.
func echo(entered chan<- string) func(s testgrpc.TestService_FullDuplexCallServer) error {
	return func(s testgrpc.TestService_FullDuplexCallServer) error {
		md, _ := metadata.FromIncomingContext(s.Context())
		entered <- first(md.Get("x-id"))
		return answer(s)
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// open opens a FullDuplexCall named id on cc.
func open(t *testing.T, ctx context.Context, cc *grpc.ClientConn, id string) testgrpc.TestService_FullDuplexCallClient {
	t.Helper()
	s, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(metadata.AppendToOutgoingContext(ctx, "x-id", id))
	require.NoError(t, err)
	return s
}

// A stream whose client cancels, or whose connection goes away, while it
// waits for the permit never runs and is a cancelled task. One whose
// client half-closes as it waits still runs, and sees the half-close. A
// running stream whose client cancels gives its permit back to the next.
func TestAServerStreamEndedByItsClientWhileItWaitsOrRuns(t *testing.T) {
	b, sub, done := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(1))
	entered := make(chan string, 10)
	_, addr := serveDuplex(t, &duplex{full: echo(entered)},
		grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e)))
	cc := dial(t, addr)
	gone := dial(t, addr)

	actx, cancelA := context.WithCancel(t.Context())
	a := open(t, actx, cc, "a")
	<-sub
	require.Equal(t, "a", <-entered)

	halfClosed := open(t, t.Context(), cc, "half-closed")
	<-sub
	require.NoError(t, halfClosed.CloseSend())

	cctx, cancelC := context.WithCancel(t.Context())
	cancelled := open(t, cctx, cc, "cancelled")
	<-sub
	cancelC()
	_, err := cancelled.Recv()
	assert.Equal(t, codes.Canceled, status.Code(err), "got %v", err)
	assert.Equal(t, groupconc.StatusCancelled, (<-done).Status, "the stream cancelled as it waited")

	open(t, t.Context(), gone, "gone")
	<-sub
	require.NoError(t, gone.Close())
	assert.Equal(t, groupconc.StatusCancelled, (<-done).Status, "the stream whose connection went away")

	cancelA()
	r := <-done
	assert.Equal(t, groupconc.StatusCancelled, r.Status, "the running stream: %v", r.Err)
	assert.Equal(t, "half-closed", <-entered, "the next to run")
	_, err = halfClosed.Recv()
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, groupconc.StatusSuccess, (<-done).Status)
	_, err = a.Recv()
	assert.Equal(t, codes.Canceled, status.Code(err))

	assert.Empty(t, entered, "a stream ran after its wait ended")
	st := e.Stats()
	assert.Zero(t, st.Running)
	assert.Equal(t, uint64(3), st.Cancelled)
	assert.Equal(t, uint64(1), st.Succeeded)
}
