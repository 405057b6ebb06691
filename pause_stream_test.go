package groupconc_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/internal/goroutines"
)

// Tasks submitted under a paused tenant wait in its pause line and start
// no goroutine each, also while the update lock is held (here by a guard
// of overrides that blocks). Each once started one, which waited for the
// lock and held its group, forgotten or not: a stream of new keys under a
// pause piled up goroutines and memory without bound.
func TestTasksUnderAPauseStartNoGoroutineEach(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		e := groupconc.New(mustBuild(t, builder().Isolation(mode).GlobalMaxInFlight(4).ParentSeparator("/")))
		t.Cleanup(func() { _ = e.Close() })
		hold := make(chan struct{})
		defer close(hold)
		for _, key := range []string{"tenant/keeper", "other"} {
			_, err := groupconc.Submit(context.Background(), e, key, "held", func(context.Context) (int, error) {
				<-hold
				return 0, nil
			})
			require.NoError(t, err)
		}
		paused := true
		require.NoError(t, e.SetGroupOverride("tenant", groupconc.GroupOverride{Paused: &paused}))
		release := holdUpdateLock(t, e, "other")
		const n = 200
		hs := make([]*groupconc.TaskHandle[int], n)
		grew, profile := goroutines.StartedBy(func() {
			for i := range hs {
				var err error
				hs[i], err = groupconc.Submit(context.Background(), e, fmt.Sprintf("tenant/u%d", i), "t", succeed)
				require.NoError(t, err)
			}
		})
		if grew >= n/10 {
			t.Errorf("%d tasks waiting under a pause started %d goroutines. All goroutines:\n%s", n, grew, profile)
		}
		release()
		for _, h := range hs {
			assert.True(t, h.Cancel(), "a task under a pause ran")
		}
	})
}

// Resume walks the tasks its pause line held on the caller's goroutine: as
// SetGroupOverride returns, the first holds the permit that was free.
func TestResumeHandsThePauseLinePermitsBeforeItReturns(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(2))
			gate := make(chan struct{})
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "g", "a", gated(gate, 0))}
			pause(t, e, "g", true)
			for _, id := range []string{"b", "c", "d"} {
				hs = append(hs, submit(t, t.Context(), e, "g", id, gated(gate, 0)))
			}
			pause(t, e, "g", false)
			gs := groupStats(t, e, "g")
			assert.Equal(t, 2, gs.Running, "Running")
			assert.Equal(t, 2, gs.Waiting, "Waiting")
			close(gate)
			quiesce(t, e, hs...)
		})
	})
}
