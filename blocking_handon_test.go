package groupconc_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A blocked caller's walk may take its group's permit, then find its
// parent's queue full and give the permit back. A task that joined the
// group's line during that walk is handed the permit. The caller carries
// it on, after the walk or as it gives up. The parent's one permit is held
// all along and its queue has no slots, so every walk is turned away
// there. Plain submitters race the blocked callers for the group's permit.
// A handed task that nobody carries on never ends: its Wait blocks, and
// the bubble deadlocks. The race needs two CPUs, so the test runs many
// rounds. On one CPU it passes without meeting it.
func TestATaskHandedTheGroupPermitOfABlockedCallersTurnedAwayWalkEnds(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").
				PerGroupMaxConcurrency(map[string]int{"p": 1}).PerGroupQueueThreshold(map[string]int{"p": 0}))
			hold := make(chan struct{})
			holder := submit(t, context.Background(), e, "p/holder", "holder", gated(hold, 0))
			synctest.Wait()
			gone, cancel := context.WithCancel(context.Background())
			cancel() // a blocked caller walks, then gives up at once

			const rounds = 2000
			var (
				mu sync.Mutex
				hs []*groupconc.TaskHandle[int]
				wg sync.WaitGroup
			)
			keep := func(h *groupconc.TaskHandle[int]) {
				if h != nil {
					mu.Lock()
					hs = append(hs, h)
					mu.Unlock()
				}
			}
			for range 2 {
				wg.Go(func() {
					for range rounds {
						h, err := groupconc.SubmitWith(gone, e, "p/g", "blocked", succeed, groupconc.SubmitOptions{Block: true})
						if err != nil {
							assert.ErrorIs(t, err, context.Canceled)
						}
						keep(h)
					}
				})
				wg.Go(func() {
					for range rounds {
						h, _ := groupconc.Submit(context.Background(), e, "p/g", "plain", succeed)
						keep(h)
					}
				})
			}
			wg.Wait()
			close(hold)
			quiesce(t, e, append(hs, holder)...)
			require.Equal(t, groupconc.StatusSuccess, holder.Wait().Status)
		})
	})
}
