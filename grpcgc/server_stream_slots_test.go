package grpcgc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc/grpcgc"
)

// A call that waits for a permit holds its HTTP/2 stream, one of the
// connection's grpc.MaxConcurrentStreams. When tenant a's calls hold them
// all, tenant b's call on the same connection waits in the client for a
// stream. It never reaches the server, here until its deadline. A queue
// threshold that refuses a's call at once gives its stream back.
func TestWaitingCallsHoldTheirConnectionsStreams(t *testing.T) {
	for _, queue := range []int{1, 0} {
		t.Run(map[int]string{1: "a waits", 0: "a refused"}[queue], func(t *testing.T) {
			b, sub, _ := watched()
			e := build(t, b.DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(queue))
			g := newGate()
			_, addr := serveDuplex(t, &duplex{empty: func(ctx context.Context) error { return g.hold(ctx, "") }},
				grpc.MaxConcurrentStreams(2),
				grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant"))))
			cc := dial(t, addr)
			errs := make(chan error, 2)
			go func() { errs <- empty(tenant(t.Context(), "a"), cc) }()
			<-sub
			<-g.entered
			go func() { errs <- empty(tenant(t.Context(), "a"), cc) }()
			<-sub
			if queue == 0 {
				assert.Equal(t, codes.ResourceExhausted, status.Code(<-errs))
			}

			if queue == 0 {
				go func() { errs <- empty(tenant(t.Context(), "b"), cc) }()
				<-sub
				<-g.entered // b runs beside a
			} else {
				ctx, cancel := context.WithTimeout(tenant(t.Context(), "b"), 50*time.Millisecond)
				defer cancel()
				err := empty(ctx, cc)
				assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "got %v", err)
				assert.Empty(t, sub, "b reached the server")
			}
			close(g.open)
			for range 2 {
				assert.NoError(t, <-errs)
			}
		})
	}
}
