package httpgc_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// runTied starts a task in each of groups a and b that runs until the test
// ends. They tie by oldest wait, so a snapshot or a sample compares their
// names.
func runTied(t *testing.T, e *groupconc.GroupExecutor) {
	gate := adaptertest.NewGate(t)
	adaptertest.Submit(t, e, "a", gate.Task)
	adaptertest.Submit(t, e, "b", gate.Task)
	gate.WaitStarted(2)
}

// showInTurn gives each group of keys in turn a task that waits a second
// and a half, so that the snapshots show that group alone meanwhile. It
// is called inside a synctest bubble, where the wait is fake time.
func showInTurn(t *testing.T, e *groupconc.GroupExecutor, keys []string) {
	for _, key := range keys {
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, key, gate.Task)
		adaptertest.Submit(t, e, key, gate.Task)
		gate.WaitStarted(1)
		time.Sleep(1500 * time.Millisecond)
		gate.Release()
		gate.WaitStarted(1)
	}
}

// The history keeps the groups shown last, twice Rows of them and not one
// more, though their keys come first: it forgets by when a group was
// shown, not by key.
func TestTheHistoryKeepsTheGroupsShownLastWhateverTheirKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
		h, err := httpgc.New(e, httpgc.Options{Rows: 2, History: 5})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		// Each group in turn, from g back to a, has a task waiting for a
		// second and a half, so the snapshot shows that group alone.
		keys := []string{"g", "f", "e", "d", "c", "b", "a"}
		showInTurn(t, e, keys)
		time.Sleep(10 * time.Second)
		var kept []string
		for _, key := range keys {
			if len(rowOf(t, h, key)["history"].([]any)) > 0 {
				kept = append(kept, key)
			}
		}
		assert.Equal(t, []string{"d", "c", "b", "a"}, kept)
	})
}

// A group evicted is forgotten by the history too: made again, it starts
// a history of its own, not the old group's.
func TestAGroupForgottenAndMadeAgainStartsItsHistoryAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "x", gate.Task)
		gate.WaitStarted(1)
		h, err := httpgc.New(e, httpgc.Options{Interval: time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		time.Sleep(3500 * time.Millisecond) // samples at 0s, 1s, 2s, 3s
		require.Len(t, rowOf(t, h, "x")["history"], 4)

		gate.Release()
		e.EvictGroup("x")
		synctest.Wait()
		time.Sleep(time.Second) // a sample finds x gone

		again := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "x", again.Task)
		again.WaitStarted(1)
		time.Sleep(time.Second) // a sample of the new x
		assert.Len(t, rowOf(t, h, "x")["history"], 1)
		again.Release()
	})
}

// Close stops the sampler for good: a sample under way when the handler
// closes finishes, but no other follows it.
func TestASampleUnderWayWhenTheHandlerClosesIsTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
		runTied(t, e)
		// a and b tie by oldest wait, so a sample names them. The first
		// name asked for holds the first sample until release.
		entered, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		h, err := httpgc.New(e, httpgc.Options{Interval: time.Second, DisplayKey: func(key string) string {
			if calls.Add(1) == 1 {
				close(entered)
				<-release
			}
			return key
		}})
		require.NoError(t, err)
		<-entered
		h.Close()
		close(release)
		synctest.Wait()
		n := calls.Load()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Equal(t, n, calls.Load(), "DisplayKey is called by no sample after Close")
	})
}

// A sample that takes long is followed by a pause nine times as long, not
// a whole Interval after it started: one that takes 200ms starts the next
// 2s after it, when Interval is 1s.
func TestASlowSampleWaitsNineTimesItsLengthBeforeTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
		runTied(t, e)
		// a and b tie by oldest wait, so each sample names both, 100ms
		// a name.
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		h, err := httpgc.New(e, httpgc.Options{Interval: time.Second, DisplayKey: func(key string) string {
			mu.Lock()
			at = append(at, time.Since(start))
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			return key
		}})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		time.Sleep(5 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{0, 100 * ms, 2000 * ms, 2100 * ms, 4000 * ms, 4100 * ms}, at)
	})
}
