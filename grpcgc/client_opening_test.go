package grpcgc_test

import (
	"context"
	"fmt"
	"strings"
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

// A client stream whose task takes its permits and ends at once, here
// because its group is shut down as it starts, ends the same way whichever
// the interceptor sees first: the task's context, sent as it started, or
// the task's end. The stream opens in that context and gets gRPC's
// Canceled. It never gets Internal, as it did when the interceptor saw the
// end first and took the task's context.Canceled for an error of its own.
//
// The interceptor is held in the executor's pressure warning, which it
// calls as its task joins the line, until the task has started and ended.
// Then both are there to see, and a select picks one at random: each round
// would have caught it with a chance of one half.
func TestAClientStreamWhoseTaskEndsAsItStartsEndsTheSameWhicheverIsSeenFirst(t *testing.T) {
	var e *groupconc.GroupExecutor
	inWarning, letGo := make(chan struct{}), make(chan struct{})
	ended := make(chan groupconc.GroupResult[any], 1)
	b := groupconc.NewPolicyBuilder().
		PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Hour},
			func(groupconc.PressureWarning) {
				inWarning <- struct{}{}
				<-letGo
			}).
		TaskLifecycleListener(groupconc.ListenerFuncs{
			Started: func(g, id string) {
				if strings.HasPrefix(id, "stream-") {
					e.ShutdownGroup(g) // cancels it as it starts
				}
			},
			Completed: func(_, id string, r groupconc.GroupResult[any]) {
				if strings.HasPrefix(id, "stream-") {
					ended <- r
				}
			},
		})
	e = build(t, b)
	key := grpcgc.WithKeyFromMetadata("x-tenant")
	c := serve(t, &health{}, nil, grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(e, key)))

	for round := range 20 {
		group := fmt.Sprint("round-", round) // a warning per group, and a group shut down per round
		holding, done := make(chan struct{}), make(chan struct{})
		held := make(chan error, 1)
		go func() {
			_, err := groupconc.Do(t.Context(), e, group, func(context.Context) (int, error) {
				close(holding)
				<-done
				return 0, nil
			}, groupconc.SubmitOptions{})
			held <- err
		}()
		<-holding
		opened := make(chan error, 1)
		go func() {
			_, err := c.Watch(tenant(t.Context(), group), &healthpb.HealthCheckRequest{})
			opened <- err
		}()
		<-inWarning // the stream's task waits in line, its interceptor held here
		close(done)
		require.NoError(t, <-held)
		r := <-ended // it started, was shut down, and ended
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "round %d", round)
		letGo <- struct{}{}
		err := <-opened
		require.Error(t, err, "round %d", round)
		assert.Equal(t, codes.Canceled, status.Code(err), "round %d: %v", round, err)
	}
}
