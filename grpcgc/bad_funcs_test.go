package grpcgc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// A key or priority function that panics, or a priority out of range,
// fails the call before it is a task, on either side, unary or streaming.
// No group is made, and no handler runs. A panic goes on up, to the
// server's recovery interceptor or to the client's caller.
func TestABadKeyOrPriorityFuncFailsTheCallBeforeItIsATask(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  grpcgc.Option
		code codes.Code
	}{
		{"key panics", grpcgc.WithKeyFunc(func(context.Context, string) string { panic("key") }), codes.Internal},
		{"priority panics", grpcgc.WithPriorityFunc(func(context.Context, string) groupconc.Priority { panic("priority") }), codes.Internal},
		{"priority -1", grpcgc.WithPriorityFunc(func(context.Context, string) groupconc.Priority { return -1 }), codes.InvalidArgument},
		{"priority 99", grpcgc.WithPriorityFunc(func(context.Context, string) groupconc.Priority { return 99 }), codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := build(t, groupconc.NewPolicyBuilder())
			ran := make(chan string, 4)
			_, addr := serveDuplex(t, &duplex{
				empty: func(context.Context) error { ran <- "unary"; return nil },
				full:  func(s testgrpc.TestService_FullDuplexCallServer) error { ran <- "stream"; return nil },
			},
				grpc.ChainUnaryInterceptor(recoverer, grpcgc.UnaryServerInterceptor(e, tc.opt)),
				grpc.ChainStreamInterceptor(streamRecoverer, grpcgc.StreamServerInterceptor(e, tc.opt)))
			cc := dial(t, addr)
			assert.Equal(t, tc.code, status.Code(empty(t.Context(), cc)), "server, unary")
			assert.Equal(t, tc.code, status.Code(fullDuplex(t.Context(), cc)), "server, stream")

			client := dial(t, addr, clientInterceptors(e, tc.opt)...)
			for name, call := range map[string]func(context.Context, *grpc.ClientConn) error{"unary": empty, "stream": fullDuplex} {
				var err error
				if v := recovered(func() { err = call(t.Context(), client) }); v != nil {
					err = status.Error(codes.Internal, fmt.Sprint("panic: ", v))
				}
				assert.Equal(t, tc.code, status.Code(err), "client, %s: got %v", name, err)
			}
			assert.Empty(t, ran, "handlers run")
			st := e.Stats()
			assert.Zero(t, st.Submitted)
			assert.Zero(t, st.Groups)
		})
	}
}
