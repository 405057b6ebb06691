package promgc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// A task cancelled through its handle as it ran is observed, with its run
// up to the Cancel, however long its function takes to return after.
func TestHistogramsObserveATaskCancelledAsItRanUpToTheCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{Buckets: []float64{1, 5}}, groupconc.NewPolicyBuilder())
		returned := make(chan struct{})
		h := submit(t, e, "a", func(ctx context.Context) (int, error) {
			defer close(returned)
			<-ctx.Done()
			time.Sleep(10 * time.Second) // past every bound
			return 0, ctx.Err()
		})
		time.Sleep(3 * time.Second)
		require.True(t, h.Cancel())
		assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status)
		<-returned
		synctest.Wait() // the listener has heard of the task
		requireMetrics(t, c, `
			groupconc_task_wait_seconds_bucket{le="1"} 1
			groupconc_task_wait_seconds_bucket{le="5"} 1
			groupconc_task_wait_seconds_bucket{le="+Inf"} 1
			groupconc_task_wait_seconds_sum 0
			groupconc_task_wait_seconds_count 1
			groupconc_task_run_seconds_bucket{le="1"} 0
			groupconc_task_run_seconds_bucket{le="5"} 1
			groupconc_task_run_seconds_bucket{le="+Inf"} 1
			groupconc_task_run_seconds_sum 3
			groupconc_task_run_seconds_count 1
		`)
	})
}
