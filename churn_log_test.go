package groupconc_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// churnLog keeps each task's events in order. Its OnStarted may call Do
// from inside the listener, on the task's goroutine.
type churnLog struct {
	mu     sync.Mutex
	events map[string][]string // guarded by mu; by eventKey
	e      atomic.Pointer[groupconc.GroupExecutor]
	dos    atomic.Int64 // Do calls made from OnStarted
	back   bool         // every event calls back into the executor
	sides  atomic.Int64 // tasks of "side" the call-backs submitted
}

// callBack calls into the executor from an event of group g, as a
// listener may: limits, overrides, stats, a task of another group.
func (l *churnLog) callBack(g, id string) {
	e := l.e.Load()
	if !l.back || e == nil || g == "side" {
		return
	}
	_ = e.UpdatePolicy(e.Policy())
	p := len(id)%2 == 0
	_ = e.SetGroupOverride("u", groupconc.GroupOverride{Paused: &p})
	e.Stats()
	for range e.AllGroupStats() {
	}
	_, _ = groupconc.Submit(context.Background(), e, "side", fmt.Sprint("b-", l.sides.Add(1)), func(context.Context) (int, error) { return 1, nil })
	e.EvictGroup("side/z")
	if strings.HasPrefix(id, "b-") { // no call-backs of call-backs' tasks
		return
	}
	// A task of its own group, and a stop of that group, mid-walk.
	_, _ = groupconc.Submit(context.Background(), e, g, fmt.Sprint("b-", l.sides.Add(1)), func(context.Context) (int, error) { return 1, nil })
	switch l.sides.Load() % 7 {
	case 0:
		e.ShutdownGroup(g)
	case 1:
		e.EvictGroup(g)
	}
}

// add calls back, then records ev of task id of group g.
func (l *churnLog) add(g, id, ev string) {
	l.callBack(g, id)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events[eventKey(g, id)] = append(l.events[eventKey(g, id)], ev)
}

func (l *churnLog) OnSubmitted(g, id string) { l.add(g, id, evSubmitted) }

func (l *churnLog) OnStarted(g, id string) {
	l.add(g, id, evStarted)
	// A Do from a listener holds no task context: it waits as any Do.
	if e := l.e.Load(); e != nil && strings.HasPrefix(id, "L-") {
		l.dos.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Millisecond)
		defer cancel()
		_, _ = groupconc.Do(ctx, e, "u/c", func(context.Context) (int, error) { return 1, nil }, groupconc.SubmitOptions{Cost: 2})
	}
}

func (l *churnLog) OnCompleted(g, id string, _ groupconc.GroupResult[any]) {
	l.add(g, id, evCompleted)
}

func (l *churnLog) OnRejected(g, id, _ string) { l.add(g, id, evRejected) }

// check reports each task whose events are not one life, in order.
func (l *churnLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := map[string]bool{
		"submitted,completed":                  true, // cancelled waiting
		"submitted,started,completed":          true,
		"submitted,rejected":                   true,
		"submitted,rejected,completed":         true, // a handler, or a pause over caller-runs
		"submitted,rejected,started,completed": true, // caller-runs
	}
	for k, evs := range l.events {
		seq := strings.Join(evs, ",")
		assert.True(t, ok[seq], "task %s: events %s", k, seq)
	}
}
