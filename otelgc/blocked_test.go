package otelgc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
)

func TestBlockedProducersAreObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
		g := newGate(t)
		h := submit(t, e, "a", g.Task)
		done := make(chan error, 1)
		go func() {
			_, err := groupconc.SubmitWith(t.Context(), e, "a", "blocked", ok, groupconc.SubmitOptions{Block: true})
			done <- err
		}()
		synctest.Wait()
		requirePoints(t, r, map[string]map[string]float64{"groupconc.submit.blocked": {none: 1}})
		g.Release()
		require.NoError(t, <-done)
		h.Wait()
		requirePoints(t, r, map[string]map[string]float64{"groupconc.submit.blocked": {none: 0}})
	})
}
