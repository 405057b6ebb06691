package grpcgc_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// A call whose deadline passes while it waits for a permit ends with
// DeadlineExceeded and never runs, unary or streaming, on the server and
// on the client. Its task is cancelled, and the permit's holder, a
// stream, runs on.
func TestACallWhoseDeadlinePassesWhileItWaitsNeverRuns(t *testing.T) {
	for _, side := range []string{"server", "client"} {
		for kind, call := range map[string]func(context.Context, *grpc.ClientConn) error{"unary": empty, "stream": fullDuplex} {
			t.Run(side+"/"+kind, func(t *testing.T) {
				b, sub, done := watched()
				e := build(t, b.DefaultMaxConcurrencyPerGroup(1))
				entered := make(chan string, 4)
				var sopts []grpc.ServerOption
				var dopts []grpc.DialOption
				if side == "server" {
					sopts = append(sopts,
						grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, oneGroup)),
						grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e, oneGroup)))
				} else {
					dopts = clientInterceptors(e, oneGroup)
				}
				_, addr := serveDuplex(t, &duplex{
					full:  echo(entered),
					empty: func(context.Context) error { entered <- "unary"; return nil },
				}, sopts...)
				cc := dial(t, addr, dopts...)
				running := open(t, t.Context(), cc, "running")
				<-sub
				require.Equal(t, "running", <-entered)

				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				defer cancel()
				err := call(ctx, cc)
				assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "got %v", err)
				assert.Equal(t, groupconc.StatusCancelled, (<-done).Status)

				require.NoError(t, running.Send(&testgrpc.StreamingOutputCallRequest{}))
				_, err = running.Recv()
				require.NoError(t, err)
				require.NoError(t, running.CloseSend())
				_, err = running.Recv()
				assert.ErrorIs(t, err, io.EOF)
				assert.Equal(t, groupconc.StatusSuccess, (<-done).Status)
				assert.Empty(t, entered, "the call that waited ran")
			})
		}
	}
}
