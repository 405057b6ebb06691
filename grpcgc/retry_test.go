package grpcgc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// A grpc-go client whose service config retries the code reads the
// pushback as grpc-go's retry does: it tries again after the pushback, not
// after the policy's backoff of ten seconds, and a pushback of -1 stops
// it. The first refusal lets the held call finish, so the retry finds room.
// The Watch stream is refused and retried as the unary Check is.
func TestAGRPCClientRetriesAfterThePushback(t *testing.T) {
	one := grpcgc.WithKeyFunc(func(context.Context, string) string { return "one" })
	for _, tc := range []struct {
		name     string
		global   bool
		pushback time.Duration
		retried  bool
	}{
		{"group queue full", false, time.Millisecond, true},
		{"global queue full", true, time.Millisecond, true},
		{"no retry", false, -1, false},
	} {
		for _, stream := range []bool{false, true} {
			name := tc.name + "/unary"
			if stream {
				name = tc.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				g := newGate()
				heldDone := make(chan struct{})
				var once sync.Once
				b, sub, _ := watched()
				b = b.TaskLifecycleListener(groupconc.ListenerFuncs{
					Submitted: func(k, _ string) { sub <- k },
					Rejected: func(string, string, string) {
						once.Do(func() {
							close(g.open)
							<-heldDone
						})
					},
					Completed: func(_, id string, r groupconc.GroupResult[any]) {
						if r.Status == groupconc.StatusSuccess && id == "do-1" {
							close(heldDone)
						}
					},
				})
				code := "RESOURCE_EXHAUSTED"
				if tc.global {
					b, code = b.GlobalMaxInFlight(1).GlobalQueueThreshold(0), "UNAVAILABLE"
				} else {
					b = b.DefaultQueueThresholdPerGroup(0)
				}
				e := build(t, b)
				opts := []grpcgc.Option{one, grpcgc.WithRetryPushback(tc.pushback)}
				c := retrying(t, &health{check: g.hold}, code, []grpc.ServerOption{
					grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, opts...)),
					grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e, opts...)),
				})
				held := make(chan error, 1)
				go func() { held <- check(t.Context(), c, "held") }()
				<-g.entered

				// A retry after the policy's backoff would pass this deadline.
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				var err error
				if stream {
					var w healthpb.Health_WatchClient
					if w, err = c.Watch(ctx, &healthpb.HealthCheckRequest{}); err == nil {
						_, err = w.Recv()
					}
				} else {
					err = check(ctx, c, "retried")
				}
				assert.NoError(t, <-held)
				if tc.retried {
					assert.NoError(t, err)
					assert.Len(t, sub, 3, "the held call, the refused one and its retry")
				} else {
					assert.Equal(t, codes.ResourceExhausted, status.Code(err), "got %v", err)
					assert.Len(t, sub, 2, "the held call and the refused one")
				}
			})
		}
	}
}

// retrying serves h as serve does, to a client whose service config
// retries the health service's calls that end with code, after a backoff
// of ten seconds unless the server's pushback says otherwise.
func retrying(t *testing.T, h *health, code string, sopts []grpc.ServerOption) healthpb.HealthClient {
	t.Helper()
	return serve(t, h, sopts, grpc.WithDefaultServiceConfig(`{"methodConfig": [{
		"name": [{"service": "grpc.health.v1.Health"}],
		"retryPolicy": {"maxAttempts": 3, "initialBackoff": "10s", "maxBackoff": "10s",
			"backoffMultiplier": 1, "retryableStatusCodes": ["`+code+`"]}}]}`))
}
