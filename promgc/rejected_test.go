package promgc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

func TestRejectionsCountADisplacedTaskUnderItsReason(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder().
		DefaultQueueThresholdPerGroup(1).
		RejectionPolicy(groupconc.RejectDiscardOldest))
	g := newGate(t)
	running := submit(t, e, "a", g.Task)
	g.WaitStarted(1)
	oldest := submit(t, e, "a", ok)
	newer := submit(t, e, "a", ok) // the queue is full: it takes oldest's slot
	assert.Equal(t, groupconc.StatusRejected, oldest.Wait().Status)
	g.Release()
	assert.Equal(t, groupconc.StatusSuccess, running.Wait().Status)
	assert.Equal(t, groupconc.StatusSuccess, newer.Wait().Status)
	quiesce(t, e)

	requireMetrics(t, c, `
		groupconc_tasks_rejected_total{reason="displaced"} 1
		groupconc_tasks_rejected_total{reason="global_queue_full"} 0
		groupconc_tasks_rejected_total{reason="group_queue_full"} 0
		groupconc_tasks_rejected_total{reason="wait_timeout"} 0
	`)
}

func TestRejectionsCountABlockWaitPastItsMaxWaitUnderItsReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
		g := newGate(t)
		running := submit(t, e, "a", g.Task)
		h, err := groupconc.SubmitWith(context.Background(), e, "a", "blocked", ok,
			groupconc.SubmitOptions{Block: true, MaxWait: time.Second}) // returns after a second of fake time
		require.NoError(t, err)
		r := h.Wait()
		require.Equal(t, groupconc.StatusRejected, r.Status)
		var re *groupconc.RejectedError
		require.True(t, errors.As(r.Err, &re))
		assert.Equal(t, groupconc.ReasonWaitTimeout, re.Reason)
		g.Release()
		running.Wait()
		quiesce(t, e)

		requireMetrics(t, c, `
			groupconc_tasks_rejected_total{reason="displaced"} 0
			groupconc_tasks_rejected_total{reason="global_queue_full"} 0
			groupconc_tasks_rejected_total{reason="group_queue_full"} 0
			groupconc_tasks_rejected_total{reason="wait_timeout"} 1
		`)
	})
}
