package promgc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

func TestCollectorReportsBlockedProducers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
		g := newGate(t)
		h := submit(t, e, "a", g.Task)
		done := make(chan error, 1)
		go func() {
			_, err := groupconc.SubmitWith(t.Context(), e, "a", "blocked", ok, groupconc.SubmitOptions{Block: true})
			done <- err
		}()
		synctest.Wait()
		requireMetrics(t, c, `groupconc_blocked_callers 1`)
		g.Release()
		require.NoError(t, <-done)
		h.Wait()
		requireMetrics(t, c, `groupconc_blocked_callers 0`)
	})
}
