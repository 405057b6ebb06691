package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/kobe/groupconc"
)

// checkQuiescent checks I2 once every task is over: every permit is back
// and nothing counts as running, waiting or in flight.
func (o *oracle) checkQuiescent(t testing.TB, e *groupconc.GroupExecutor) bool {
	t.Helper()
	ok := true
	if err := e.Quiescent(); err != nil {
		t.Errorf("I2: permits leaked: %v", err)
		ok = false
	}
	if s := e.Stats(); s.Running != 0 || s.Waiting != 0 || s.GlobalInFlight != 0 {
		t.Errorf("I2: after quiescence Stats() Running=%d Waiting=%d GlobalInFlight=%d, want all 0", s.Running, s.Waiting, s.GlobalInFlight)
		ok = false
	}
	if c := o.gauges.global.cur.Load(); c != 0 {
		t.Errorf("I2: %d functions still running, want 0", c)
		ok = false
	}
	return ok
}

// observe records the first status seen of every completed handle and
// reports a handle whose status changed since (I3: never overwritten). It is
// cheap enough to call after every step.
func (o *oracle) observe(t testing.TB) bool {
	t.Helper()
	ok := true
	for _, tr := range o.snapshot() {
		select {
		case <-tr.done:
		default:
			continue
		}
		r := tr.result()
		if tr.first == 0 {
			tr.first, tr.firstErr = r.Status, r.Err
			continue
		}
		if r.Status != tr.first || r.Err != tr.firstErr {
			t.Errorf("I3: task %s/%s result changed from %v (%v) to %v (%v)", tr.groupKey, tr.taskID, tr.first, tr.firstErr, r.Status, r.Err)
			ok = false
		}
	}
	return ok
}

// checkResults checks I3 once every task is over: every tracked handle is
// complete with a valid status that never changed, and the executor's
// outcome counters count each accepted Submit once, by that status.
func (o *oracle) checkResults(t testing.TB, e *groupconc.GroupExecutor) bool {
	t.Helper()
	ok := o.observe(t)
	var by [5]uint64
	for i := range by {
		by[i] = o.finals[i].Load()
	}
	if by[0] != 0 {
		t.Errorf("I3: %d tasks ended with an invalid status", by[0])
		ok = false
	}
	tracked := o.snapshot()
	for _, tr := range tracked {
		select {
		case <-tr.done:
		default:
			t.Errorf("I3: task %s/%s has no result after quiescence", tr.groupKey, tr.taskID)
			ok = false
			continue
		}
		r := tr.result()
		if r.Status < groupconc.StatusSuccess || r.Status > groupconc.StatusRejected {
			t.Errorf("I3: task %s/%s ended with status %v", tr.groupKey, tr.taskID, r.Status)
			ok = false
			continue
		}
		by[r.Status]++
		if r.GroupKey != tr.groupKey || r.TaskID != tr.taskID {
			t.Errorf("I3: task %s/%s result names %s/%s", tr.groupKey, tr.taskID, r.GroupKey, r.TaskID)
			ok = false
		}
		if (r.Status == groupconc.StatusSuccess) != (r.Err == nil) {
			t.Errorf("I3: task %s/%s ended %v with Err %v", tr.groupKey, tr.taskID, r.Status, r.Err)
			ok = false
		}
		if r.Status == groupconc.StatusRejected && !errors.As(r.Err, new(*groupconc.RejectedError)) {
			t.Errorf("I3: task %s/%s REJECTED with Err %v, want a *RejectedError", tr.groupKey, tr.taskID, r.Err)
			ok = false
		}
	}
	s := e.Stats()
	if s.Submitted != uint64(o.accepted.Load()) {
		t.Errorf("I3: Stats().Submitted = %d, want %d accepted Submits", s.Submitted, o.accepted.Load())
		ok = false
	}
	got := [5]uint64{0, s.Succeeded, s.Failed, s.Cancelled, s.Rejected}
	if got != by {
		t.Errorf("I3: Stats() outcomes (succeeded, failed, cancelled, rejected) = %v, want %v from the handles", got[1:], by[1:])
		ok = false
	}
	if s.Succeeded+s.Failed+s.Cancelled+s.Rejected != s.Submitted {
		t.Errorf("I3: Stats() outcomes add up to %d, want Submitted %d", s.Succeeded+s.Failed+s.Cancelled+s.Rejected, s.Submitted)
		ok = false
	}
	return ok
}

// awaitAll calls Await(ctx) on every tracked handle and reports a handle
// whose Await returned only because ctx ended (I3, I7).
func (o *oracle) awaitAll(t testing.TB, ctx context.Context) bool {
	t.Helper()
	ok := true
	for _, tr := range o.snapshot() {
		r, err := tr.await(ctx)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			select {
			case <-tr.done:
			default:
				t.Errorf("I7: Await of task %s/%s returned only because its context ended: %v %v", tr.groupKey, tr.taskID, r.Status, err)
				ok = false
			}
		}
	}
	return ok
}

// checkEvents checks I4 once every task is over: each accepted task has a
// complete life of events in a valid order, heard once each; its function
// ran exactly when OnStarted was heard; OnCompleted carried its handle's
// result; nothing was heard of refused Submits nor after seal; and the
// totals balance: submitted = completed + rejected-and-never-run, started =
// completed - cancelled-before-start.
func (o *oracle) checkEvents(t testing.TB) bool {
	t.Helper()
	return o.checkEventsFinal(t, true)
}

// checkEventsSoFar checks that every task's events so far are a prefix of a
// valid life; it may be called at any time.
func (o *oracle) checkEventsSoFar(t testing.TB) bool {
	t.Helper()
	return o.checkEventsFinal(t, false)
}

func (o *oracle) checkEventsFinal(t testing.TB, final bool) bool {
	t.Helper()
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		ok = false
		t.Errorf("I4: "+format, args...)
	}
	tracked := o.snapshot()
	o.mu.Lock()
	handler, refused, dos := o.handler, slices.Clone(o.refused), maps.Clone(o.doKeys)
	o.mu.Unlock()
	want := make(map[string]*oracleTracked, len(tracked))
	for _, tr := range tracked {
		want[oracleKey(tr.groupKey, tr.taskID)] = tr
	}
	for _, k := range refused {
		if l, found := o.rec.lookup(oracleSplit(k)); found && l.n > 0 {
			fail("refused Submit %q heard %v", k, &l)
		}
	}
	var submitted, started, completed, rejectedNeverRun, cancelledBeforeStart int
	var msgs []string // collected under the shard locks, reported after
	o.rec.each(func(k string, l *oracleTaskLog) {
		g, id := oracleSplit(k)
		name := g + "/" + id
		seq := l.seq()
		if l.n == 0 && want[k] == nil {
			return // wrapped for a Submit that was refused
		}
		if l.overflow || !oracleLifeOK(seq, final) {
			msgs = append(msgs, fmt.Sprintf("task %s heard %v, not a valid life (final=%v)", name, l, final))
		}
		if l.late {
			msgs = append(msgs, fmt.Sprintf("task %s heard an event after Shutdown returned: %v", name, l))
		}
		runs := slices.Contains(seq, oracleStarted)
		if l.n > 0 && seq[0] == oracleSubmitted && want[k] == nil && !dos[k] && len(tracked) > 0 {
			msgs = append(msgs, fmt.Sprintf("task %s heard %v but no Submit accepted it", name, l))
		}
		if final && l.wrapped && (l.fnCalls > 1 || (l.fnCalls == 1) != runs) {
			msgs = append(msgs, fmt.Sprintf("task %s: function entered %d times, events %v", name, l.fnCalls, l))
		}
		for _, ev := range seq {
			switch ev {
			case oracleSubmitted:
				submitted++
			case oracleStarted:
				started++
			case oracleCompleted:
				completed++
			}
		}
		if slices.Equal(seq, oracleLifes[2]) {
			rejectedNeverRun++
		}
		if slices.Equal(seq, oracleLifes[0]) {
			cancelledBeforeStart++
			if l.completed != groupconc.StatusCancelled {
				msgs = append(msgs, fmt.Sprintf("task %s completed without starting as %v, want CANCELLED", name, l.completed))
			}
		}
		if l.misnamed {
			msgs = append(msgs, fmt.Sprintf("task %s: OnCompleted's result names another task", name))
		}
		tr := want[k]
		if !final || tr == nil {
			return
		}
		select {
		case <-tr.done:
		default:
			return // checkResults reports it
		}
		r := tr.result()
		if slices.Contains(seq, oracleCompleted) && l.completed != r.Status {
			msgs = append(msgs, fmt.Sprintf("task %s: OnCompleted said %v, the handle %v", name, l.completed, r.Status))
		}
		if slices.Equal(seq, oracleLifes[2]) && !handler && r.Status != groupconc.StatusRejected && r.Status != groupconc.StatusCancelled {
			msgs = append(msgs, fmt.Sprintf("task %s was rejected and never ran but ended %v", name, r.Status))
		}
	})
	for _, m := range msgs {
		fail("%s", m)
	}
	if final {
		for k := range want {
			if l, found := o.rec.lookup(oracleSplit(k)); !found || l.n == 0 {
				fail("accepted task %q heard no event", k)
			}
		}
		if submitted != completed+rejectedNeverRun {
			fail("submitted %d != completed %d + rejected-and-never-run %d", submitted, completed, rejectedNeverRun)
		}
		if started != completed-cancelledBeforeStart {
			fail("started %d != completed %d - cancelled-before-start %d", started, completed, cancelledBeforeStart)
		}
		if n := o.accepted.Load(); submitted != int(n) {
			fail("heard %d OnSubmitted, want %d accepted Submits", submitted, n)
		}
	}
	return ok
}

// checkNoPanics reports the panics guard caught (I6); guard already failed
// the test, this is for callers that want a boolean.
func (o *oracle) checkNoPanics(t testing.TB) bool {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.panics) == 0
}

// checkAll runs every end-of-life check: call it once every task is over
// (after Shutdown returned nil, or after Close and synctest.Wait).
func (o *oracle) checkAll(t testing.TB, e *groupconc.GroupExecutor, lim oracleLimits) bool {
	t.Helper()
	ok := o.checkLimits(t, lim)
	ok = o.checkQuiescent(t, e) && ok
	ok = o.checkResults(t, e) && ok
	ok = o.checkEvents(t) && ok
	return o.checkNoPanics(t) && ok
}
