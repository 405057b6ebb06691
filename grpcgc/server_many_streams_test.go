package grpcgc_test

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// Many streams on one connection keep to the limit. A third of them are
// cancelled by their clients, some as they wait and some as they run. Each
// ends as a task that succeeded or was cancelled, and every permit is back.
func TestManyStreamsOnOneConnectionKeepToTheLimit(t *testing.T) {
	const streams, limit = 60, 3
	b, _, done := watched()
	b = b.DefaultMaxConcurrencyPerGroup(limit).DefaultQueueThresholdPerGroup(streams)
	e := build(t, b)
	var mu sync.Mutex
	now, most := 0, 0
	_, addr := serveDuplex(t, &duplex{full: func(s testgrpc.TestService_FullDuplexCallServer) error {
		mu.Lock()
		now++
		most = max(most, now)
		mu.Unlock()
		defer func() {
			mu.Lock()
			now--
			mu.Unlock()
		}()
		return answer(s)
	}}, grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e)))
	cc := dial(t, addr)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(ctx)
			if !assert.NoError(t, err) {
				return
			}
			if i%3 == 0 {
				cancel()
				return
			}
			assert.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
			_, err = s.Recv()
			assert.NoError(t, err)
			assert.NoError(t, s.CloseSend())
			_, err = s.Recv()
			assert.ErrorIs(t, err, io.EOF)
		})
	}
	wg.Wait()
	// A cancelled stream may never reach the server. Those that did are
	// tasks, and the others succeeded.
	ok, cancelled := 0, 0
	for ok < streams*2/3 {
		switch r := <-done; r.Status {
		case groupconc.StatusSuccess:
			ok++
		case groupconc.StatusCancelled:
			cancelled++
		default:
			t.Fatalf("a stream's task: %v, %v", r.Status, r.Err)
		}
	}
	assert.LessOrEqual(t, most, limit, "streams at once")
	assert.Equal(t, streams*2/3, ok)
	assert.LessOrEqual(t, cancelled, streams/3)
}
