package groupconc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvictedGroupTasksReleaseIntoTheOldSemaphores(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			p := mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).
				DefaultMaxConcurrencyPerGroup(2).DefaultMaxInFlightPerGroup(3).DefaultQueueThresholdPerGroup(5))
			e := groupconc.New(p)
			defer e.Close()
			oldGate := make(chan struct{})
			var oldG gauge
			var old []*groupconc.TaskHandle[int]
			for i := range 2 {
				old = append(old, submit(t, t.Context(), e, "g", fmt.Sprint("old", i), gated(oldGate, i, &oldG)))
			}
			synctest.Wait()
			require.EqualValues(t, 2, oldG.cur.Load())

			e.EvictGroup("g")
			newGate := make(chan struct{})
			var newG gauge
			var fresh []*groupconc.TaskHandle[int]
			for i := range 5 {
				fresh = append(fresh, submit(t, t.Context(), e, "g", fmt.Sprint("new", i), gated(newGate, i, &newG)))
			}
			synctest.Wait()
			assert.EqualValues(t, 2, newG.cur.Load(), "new group running beside the evicted one")
			assert.EqualValues(t, 2, oldG.cur.Load(), "evicted group's functions still running")

			// The old tasks return (their context was cancelled, but they ignore
			// it) and give their permits back to the evicted group.
			openGate(t, oldGate, old, "old")
			synctest.Wait()
			assert.EqualValues(t, 2, newG.cur.Load(), "new group running after the old tasks released")
			gs, ok := e.GroupStats("g")
			require.True(t, ok)
			assert.Equal(t, 2, gs.Running, "GroupStats.Running of the new group")
			assert.Equal(t, 3, gs.InFlight, "GroupStats.InFlight of the new group")
			assert.Equal(t, 3, gs.Waiting, "GroupStats.Waiting of the new group")

			openGate(t, newGate, fresh, "new")
			assert.EqualValues(t, 2, newG.max.Load(), "most new-group tasks at once")
			synctest.Wait()
			assert.NoError(t, e.Quiescent())
		})
	})
}

// Evicting a
// group in use cancels its tasks; those still running keep the old
// group's permits; the next task of the key gets a fresh group with freshly
// resolved limits. Until the old tasks return, old and new together may run
// more than one group's limit; each state alone never does.
func TestEvictInUseGroupKeepsOldPermitsAndStartsFresh(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var resolutions atomic.Int32
			limits := []int{2, 3}
			b := builder().Isolation(mode).ConcurrencyResolver(func(string) int { return limits[min(int(resolutions.Add(1))-1, 1)] })
			r := newEnv(t, b)
			gen := func(n int) func(fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
				return func(fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
					h, err := oracleSubmitAs(r.o, fmt.Sprintf("a#%d", n), r.ctx, r.e, "a", r.nextID(), fn)
					require.NoError(t, err)
					return h
				}
			}
			old, fresh := gen(0), gen(1)

			oldGate := make(chan struct{})
			var oldCtxs []context.Context
			var mu sync.Mutex
			running := func(ctx context.Context) (int, error) {
				mu.Lock()
				oldCtxs = append(oldCtxs, ctx)
				mu.Unlock()
				<-oldGate // ignores its context: keeps its permit until it returns
				return 1, nil
			}
			o1, o2, o3 := old(running), old(running), old(running)
			synctest.Wait()
			require.Equal(t, 2, r.countStarted(o1, o2, o3))
			probeOld, ok := r.e.GroupProbe("a")
			require.True(t, ok)

			r.e.EvictGroup("a")
			synctest.Wait()
			_, known := r.e.GroupStats("a")
			assert.False(t, known, "an evicted group is forgotten")
			assert.Equal(t, groupconc.StatusCancelled, o3.Wait().Status, "the waiting task is cancelled")
			for _, ctx := range oldCtxs {
				assert.Error(t, ctx.Err(), "running tasks see their context cancelled")
			}

			newGate := make(chan struct{})
			var news []*groupconc.TaskHandle[int]
			for range 4 {
				news = append(news, fresh(block(newGate)))
			}
			synctest.Wait()
			assert.EqualValues(t, 2, resolutions.Load(), "the limits are resolved again after eviction")
			assert.Equal(t, 3, r.countStarted(news...), "the new group has fresh permits with the new limit 3")
			gs, _ := r.e.GroupStats("a")
			assert.Equal(t, 3, gs.MaxConcurrency)
			assert.Equal(t, 3, gs.Running, "the new group's stats count only its own tasks")
			assert.EqualValues(t, 5, r.o.gauges.global.cur.Load(), "documented: old and new together run 2+3")

			// The old tasks return: their permits go back to the old state and
			// must not let the new group's waiter in.
			close(oldGate)
			synctest.Wait()
			assert.Equal(t, 3, r.countStarted(news...), "old releases must not reach the new group's permits")
			gs, _ = r.e.GroupStats("a")
			assert.Equal(t, 3, gs.Running)
			assert.NoError(t, probeOld(), "the old state got all its permits back")

			close(newGate)
			r.finish()
			assert.EqualValues(t, 2, r.o.groupMax("a#0"))
			assert.EqualValues(t, 3, r.o.groupMax("a#1"))
		})
	})
}

// Tasks holding every layer of an evicted group release into that old
// state, never into the new one (no "released more than held" panic, no
// inflated capacity), and the old state ends fully released. ShutdownGroup
// keeps the state: its tasks release into the same one.
func TestReleaseAfterEvictGoesToTheOldState(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			b := builder().Isolation(mode).GlobalMaxInFlight(4).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(1)
			r := newEnv(t, b)
			oldGate := make(chan struct{})
			for range 2 {
				h, err := oracleSubmitAs(r.o, "a#0", r.ctx, r.e, "a", r.nextID(), block(oldGate))
				require.NoError(t, err)
				_ = h
			}
			synctest.Wait()
			probeOld, _ := r.e.GroupProbe("a")
			r.e.EvictGroup("a")

			newGate := make(chan struct{})
			var news []*groupconc.TaskHandle[int]
			for range 3 { // 2 run, 1 waits in the new group's queue (threshold 1)
				h, err := oracleSubmitAs(r.o, "a#1", r.ctx, r.e, "a", r.nextID(), block(newGate))
				require.NoError(t, err)
				news = append(news, h)
			}
			synctest.Wait()
			require.Equal(t, 2, r.countStarted(news...))
			probeNew, _ := r.e.GroupProbe("a")

			close(oldGate)
			synctest.Wait()
			assert.Equal(t, 2, r.countStarted(news...), "old releases leave the new group's capacity alone")
			assert.NoError(t, probeOld())
			assert.Error(t, probeNew(), "the new group is still fully used")

			// The new group's queue threshold is intact: one more waits, the next
			// is rejected.
			extra, err := oracleSubmitAs(r.o, "a#1", r.ctx, r.e, "a", r.nextID(), block(newGate))
			require.NoError(t, err)
			synctest.Wait()
			assert.Equal(t, groupconc.StatusRejected, extra.Wait().Status)

			close(newGate)
			r.finish()
			assert.NoError(t, probeNew())
			assert.EqualValues(t, 2, r.o.groupMax("a#1"))
		})
	})
}

// 64 goroutines submit to one fresh key at once: one state is created,
// so the group's limit holds and is reached.
func TestRacingFirstSubmitsShareOneGroupState(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for range 5 {
			synctest.Test(t, func(t *testing.T) {
				r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(3).DefaultMaxInFlightPerGroup(3))
				start, gate := make(chan struct{}), make(chan struct{})
				var wg sync.WaitGroup
				for i := range 64 {
					wg.Go(func() {
						<-start
						_, err := oracleSubmit(r.o, r.ctx, r.e, "fresh", fmt.Sprintf("t%d", i), block(gate))
						assert.NoError(t, err)
					})
				}
				close(start)
				wg.Wait()
				synctest.Wait()
				assert.Equal(t, 1, r.e.Stats().Groups, "exactly one state for the key")
				assert.EqualValues(t, 3, r.o.groupMax("fresh"), "the limit is reached and not exceeded")
				gs, _ := r.e.GroupStats("fresh")
				assert.Equal(t, 3, gs.Running)
				assert.Equal(t, 61, gs.Waiting)
				close(gate)
				r.finish()
			})
		}
	})
}

// Group state for 10 000 keys is all gone after EvictGroup, and no
// goroutine is left (the bubble's end checks I5). The design has no idle
// sweeper: eviction is explicit.
func TestEvictingEveryGroupLeavesNoState(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2))
			const n = 10_000
			for i := range n {
				r.submit(fmt.Sprintf("k%d", i), succeed)
			}
			synctest.Wait()
			require.Equal(t, n, r.e.Stats().Groups)
			require.NoError(t, r.e.Quiescent())
			for i := range n {
				r.e.EvictGroup(fmt.Sprintf("k%d", i))
			}
			s := r.e.Stats()
			assert.Zero(t, s.Groups)
			_, ok := r.e.GroupStats("k0")
			assert.False(t, ok)
			r.finish()
		})
	})
}
