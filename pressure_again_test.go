package groupconc_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A key's group evicted and made again is a new group: its first backlog
// warns, whatever the old group's cooldown, and carries none of the old
// group's suppressed warnings.
func TestAGroupMadeAgainAfterAnEvictionHasACooldownOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []groupconc.PressureWarning
		p := mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Hour, Cooldown: time.Minute},
				func(w groupconc.PressureWarning) { mu.Lock(); got = append(got, w); mu.Unlock() }))
		e := groupconc.New(p)
		defer e.Close()
		gate := make(chan struct{})
		held := func(ctx context.Context) (int, error) {
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return 0, nil
		}
		var hs []*groupconc.TaskHandle[int]
		for range 3 { // the second warns, the third is held back by the cooldown
			hs = append(hs, submit(t, t.Context(), e, "a", "t", held))
		}
		synctest.Wait()
		e.EvictGroup("a")
		for _, h := range hs {
			h.Wait()
		}
		for range 2 {
			hs = append(hs, submit(t, t.Context(), e, "a", "t", held))
		}
		synctest.Wait()
		mu.Lock()
		ws := append([]groupconc.PressureWarning(nil), got...)
		mu.Unlock()
		if assert.Len(t, ws, 2, "a warning for each group of key a") {
			assert.Zero(t, ws[1].Suppressed, "the new group's own count")
		}
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
	})
}

// A warning function may submit a task that waits. It does so from inside
// the age check, which arms the timer again as it ends: the check and the
// task's Submit arm it once between them, and Shutdown still returns once
// the tasks end.
func TestAWarningFunctionThatSubmitsLeavesShutdownToReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var e *groupconc.GroupExecutor
		var late *groupconc.TaskHandle[int]
		e = groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).
			PressureWarnings(groupconc.PressureConfig{BacklogAge: 4 * time.Second}, func(groupconc.PressureWarning) {
				if late == nil {
					late = submit(t, t.Context(), e, "a", "late", gated(gate, 0))
				}
			})))
		defer e.Close()
		hs := []*groupconc.TaskHandle[int]{
			submit(t, t.Context(), e, "a", "running", gated(gate, 0)),
			submit(t, t.Context(), e, "a", "waiting", gated(gate, 0)),
		}
		time.Sleep(4 * time.Second) // fake clock: the check warns, and fn submits
		synctest.Wait()
		require.NotNil(t, late, "warned by age")
		close(gate)
		for _, h := range append(hs, late) {
			h.Wait()
		}
		assert.NoError(t, e.Shutdown(t.Context()))
	})
}
