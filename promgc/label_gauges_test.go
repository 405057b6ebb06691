package promgc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// With a group label, the concurrency limits and the blocked callers are
// summed by label value, as the tasks are.
func TestGroupLabelSumsLimitsAndBlockedCallersByValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{GroupClass: tier}, groupconc.NewPolicyBuilder().
			PerGroupMaxConcurrency(map[string]int{"gold-1": 2, "gold-2": 3}).
			DefaultMaxConcurrencyPerGroup(1).
			DefaultQueueThresholdPerGroup(0))
		g := newGate(t)
		var hs []*groupconc.TaskHandle[int]
		for _, key := range []string{"gold-1", "gold-2", "free-1"} {
			hs = append(hs, submit(t, e, key, g.Task))
		}
		done := make(chan error, 1)
		go func() {
			_, err := groupconc.SubmitWith(t.Context(), e, "free-1", "blocked", ok, groupconc.SubmitOptions{Block: true})
			done <- err
		}()
		synctest.Wait()
		requireMetrics(t, c, `
			groupconc_concurrency_limit{group="free"} 1
			groupconc_concurrency_limit{group="gold"} 5
			groupconc_blocked_callers{group="free"} 1
			groupconc_blocked_callers{group="gold"} 0
		`)
		g.Release()
		require.NoError(t, <-done)
		for _, h := range hs {
			h.Wait()
		}
	})
}
