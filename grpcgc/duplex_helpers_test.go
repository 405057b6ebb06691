package grpcgc_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/grpcgc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
)

// duplex is grpc-go's test service, whose EmptyCall and FullDuplexCall
// run hooks. FullDuplexCall is a stream that both sides may half-close.
type duplex struct {
	testgrpc.UnimplementedTestServiceServer
	empty func(ctx context.Context) error
	full  func(s testgrpc.TestService_FullDuplexCallServer) error
}

func (d *duplex) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	if d.empty != nil {
		if err := d.empty(ctx); err != nil {
			return nil, err
		}
	}
	return &testgrpc.Empty{}, nil
}

func (d *duplex) FullDuplexCall(s testgrpc.TestService_FullDuplexCallServer) error {
	if d.full != nil {
		return d.full(s)
	}
	return nil
}

// oneGroup keys every call to one group, so a unary call waits for a
// stream's permit.
var oneGroup = grpcgc.WithKeyFunc(func(context.Context, string) string { return "one" })

// serveDuplex starts a gRPC server on 127.0.0.1 with d and the server
// options. It returns the server and its address. It stops when the test
// ends, unless the test stopped it.
func serveDuplex(t *testing.T, d *duplex, sopts ...grpc.ServerOption) (*grpc.Server, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer(sopts...)
	testgrpc.RegisterTestServiceServer(s, d)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	t.Cleanup(func() {
		s.Stop()
		<-served
	})
	return s, lis.Addr().String()
}

// dial returns a client connection to addr with the dial options. It is
// closed when the test ends, unless the test closed it.
func dial(t *testing.T, addr string, dopts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient(addr, dopts...)
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	return cc
}

// empty makes an EmptyCall on cc.
func empty(ctx context.Context, cc *grpc.ClientConn) error {
	_, err := testgrpc.NewTestServiceClient(cc).EmptyCall(ctx, &testgrpc.Empty{})
	return err
}

// fullDuplex opens a FullDuplexCall on cc and reads its first message or
// its end.
func fullDuplex(ctx context.Context, cc *grpc.ClientConn) error {
	s, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(ctx)
	if err != nil {
		return err
	}
	_, err = s.Recv()
	return err
}
