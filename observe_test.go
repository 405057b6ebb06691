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

// obsLog is a listener that appends "name:event:task" lines to a shared log.
func obsLog(mu *sync.Mutex, log *[]string, name string) groupconc.ListenerFuncs {
	add := func(event, id string) {
		mu.Lock()
		*log = append(*log, name+":"+event+":"+id)
		mu.Unlock()
	}
	return groupconc.ListenerFuncs{
		Submitted: func(_, id string) { add("submitted", id) },
		Started:   func(_, id string) { add("started", id) },
		Completed: func(_, id string, _ groupconc.GroupResult[any]) { add("completed", id) },
		Rejected:  func(_, id, _ string) { add("rejected", id) },
	}
}

func TestListenersCallEachListenerInOrderAndIsolateTheirPanics(t *testing.T) {
	var mu sync.Mutex
	var log []string
	panicky := groupconc.ListenerFuncs{
		Submitted: func(string, string) { panic("submitted") },
		Started:   func(string, string) { panic("started") },
		Completed: func(string, string, groupconc.GroupResult[any]) { panic("completed") },
	}
	l := groupconc.Listeners(obsLog(&mu, &log, "first"), nil, panicky, obsLog(&mu, &log, "second"))
	p, err := groupconc.NewPolicyBuilder().TaskLifecycleListener(l).Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	defer e.Close()
	h, err := groupconc.Submit(context.Background(), e, "g", "t1", func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
	require.NoError(t, e.Shutdown(context.Background()))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"first:submitted:t1", "second:submitted:t1",
		"first:started:t1", "second:started:t1",
		"first:completed:t1", "second:completed:t1",
	}, log)
}

func TestListenersOfNothingIgnoresEveryEvent(t *testing.T) {
	l := groupconc.Listeners(nil)
	require.NotNil(t, l)
	l.OnSubmitted("g", "t")
	l.OnStarted("g", "t")
	l.OnCompleted("g", "t", groupconc.GroupResult[any]{})
	l.OnRejected("g", "t", groupconc.ReasonGroupQueueFull)
}

func TestAllGroupStatsYieldsEveryKnownGroupWhileGroupsComeAndGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		gate := make(chan struct{})
		ctx := context.Background()
		for _, key := range []string{"a", "b", "c"} {
			_, err := groupconc.Submit(ctx, e, key, key+"1", func(context.Context) (int, error) { <-gate; return 0, nil })
			require.NoError(t, err)
		}
		synctest.Wait()
		seen := map[string]groupconc.GroupStats{}
		for gs := range e.AllGroupStats() {
			seen[gs.GroupKey] = gs
			// The loop body may call into the executor: no lock is held.
			if gs.GroupKey == "a" {
				e.EvictGroup("b")
				_, err := groupconc.Submit(ctx, e, "d", "d1", func(context.Context) (int, error) { return 0, nil })
				require.NoError(t, err)
			}
		}
		assert.Contains(t, seen, "a")
		assert.Contains(t, seen, "c")
		for _, gs := range seen {
			assert.Equal(t, 1, gs.MaxConcurrency, "group %s", gs.GroupKey)
			assert.Equal(t, 1, gs.Weight, "group %s", gs.GroupKey)
		}
		synctest.Wait()
		var keys []string
		for gs := range e.AllGroupStats() {
			keys = append(keys, gs.GroupKey)
		}
		assert.ElementsMatch(t, []string{"a", "c", "d"}, keys)
		for range e.AllGroupStats() {
			break // stopping early is allowed
		}
		close(gate)
	})
}

func TestThresholdRejectionsCarryTheExportedReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(2).GlobalQueueThreshold(0).
			DefaultQueueThresholdPerGroup(0).Build()
		require.NoError(t, err)
		e := groupconc.New(p)
		defer e.Close()
		ctx := context.Background()
		gate := make(chan struct{})
		block := func(context.Context) (int, error) { <-gate; return 0, nil }
		_, err = groupconc.Submit(ctx, e, "a", "a1", block)
		require.NoError(t, err)
		group, err := groupconc.Submit(ctx, e, "a", "a2", block) // a's concurrency 1, no group queue
		require.NoError(t, err)
		_, err = groupconc.Submit(ctx, e, "b", "b1", block)
		require.NoError(t, err)
		global, err := groupconc.Submit(ctx, e, "c", "c1", block) // global cap 2 reached, no global queue
		require.NoError(t, err)
		var re *groupconc.RejectedError
		_, err = group.Await(ctx)
		require.ErrorAs(t, err, &re)
		assert.Equal(t, groupconc.ReasonGroupQueueFull, re.Reason)
		_, err = global.Await(ctx)
		require.ErrorAs(t, err, &re)
		assert.Equal(t, groupconc.ReasonGlobalQueueFull, re.Reason)
		close(gate)
	})
}
