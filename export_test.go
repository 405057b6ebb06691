package groupconc

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/kobe/groupconc/internal/groupstate"
)

// Probes for the tests of package groupconc_test. They live here, not in
// the library: the library keeps no test-only code.

// Quiescent reports an error naming every layer of e (global, and each
// known group's) that does not have all its permits and queue slots back,
// or still counts a waiting task. Call it only once every task has finished.
func (e *GroupExecutor) Quiescent() error {
	errs := []error{quietGlobal(e.global)}
	e.groups.Range(func(g *groupstate.Group[task]) bool {
		errs = append(errs, quietGroup(g))
		return true
	})
	return errors.Join(errs...)
}

// GroupProbe returns a probe of groupKey's current group state, or false if
// the group does not exist. The probe keeps that state: called after
// EvictGroup, it still checks the old group, which the registry has
// forgotten but the old group's tasks release into. Like Quiescent, call
// the probe only once the group's tasks have all finished.
func (e *GroupExecutor) GroupProbe(groupKey string) (probe func() error, ok bool) {
	g, ok := e.groups.Lookup(groupKey)
	if !ok {
		return nil, false
	}
	return func() error { return quietGroup(g) }, true
}

// HandleSize is the size of a handle whose value takes no room: what every
// Submit allocates beyond the value, and what every waiting task is.
const HandleSize = unsafe.Sizeof(TaskHandle[struct{}]{})

// DoCallSize is the size of the record a Do of an int allocates.
const DoCallSize = unsafe.Sizeof(doCall[int]{})

// RoomyHandleSize is the size of a handle made with room for its task's
// Ext, as every handle is under a policy with parents.
const RoomyHandleSize = unsafe.Sizeof(roomy[TaskHandle[struct{}]]{})

func quietGlobal(gl *groupstate.Global[task]) error {
	running, waiting, _ := gl.Counts()
	inFlight, slots := gl.Held()
	watched := watchers(gl)
	if running|waiting|inFlight|slots|int(watched) != 0 {
		return fmt.Errorf("global: %d running, %d waiting, %d permits and %d queue slots held, %d callers watched", running, waiting, inFlight, slots, watched)
	}
	return nil
}

// watchers is how many blocked callers gl still watches (see
// groupstate.WatchGlobal). The library has no use for the count, so it is
// read here through the field.
func watchers(gl *groupstate.Global[task]) int64 {
	n := reflect.ValueOf(gl).Elem().FieldByName("watch").FieldByName("n")
	return (*atomic.Int64)(unsafe.Pointer(n.UnsafeAddr())).Load()
}

func quietGroup(g *groupstate.Group[task]) error {
	bulkhead, conc, slots := g.Held()
	running, waiting, inFlight := g.Counts()
	if bulkhead|conc|slots|running|waiting|inFlight != 0 {
		return fmt.Errorf("group %q: %d running, %d waiting, %d in flight, %d bulkhead and %d concurrency permits and %d queue slots held", g.Key(), running, waiting, inFlight, bulkhead, conc, slots)
	}
	return nil
}

// CancelCauseAfterClose runs Cancel's steps on a task of its own (claim,
// record the cause, publish), with the task's context closed between the
// claim and the cause, as the task's owner does when it ends the task
// meanwhile (see cancel). It returns the Err of the result Cancel publishes.
func CancelCauseAfterClose(cause error) error {
	t := &task{caller: context.Background()}
	t.claimRan()
	t.context().close()
	t.context().cancelWith(cause)
	t.publishCancelled(0, false)
	_, _, _, err := t.finalResult()
	return err
}

// OverridesKept returns how many keys e keeps an override for, live or
// not.
func (e *GroupExecutor) OverridesKept() int {
	e.overrides.mu.Lock()
	defer e.overrides.mu.Unlock()
	return len(e.overrides.byKey)
}

// SetOverrideAsEvicted evicts groupKey's group and then keeps o as its
// override, as a SetGroupOverride does whose group is evicted between its
// check and its store: an override of a group that is gone.
func (e *GroupExecutor) SetOverrideAsEvicted(groupKey string, o GroupOverride) {
	g, ok := e.groups.Lookup(groupKey)
	if !ok {
		panic("SetOverrideAsEvicted: no group " + groupKey)
	}
	e.EvictGroup(groupKey)
	e.overrides.mu.Lock()
	defer e.overrides.mu.Unlock()
	if e.overrides.byKey == nil {
		e.overrides.byKey = make(map[string]override)
	}
	e.overrides.byKey[groupKey] = override{g: g, o: o}
	e.overrides.n.Store(int64(len(e.overrides.byKey)))
}

// OnRunRejected has f run, until the test ends, as the goroutine of a
// task turned away begins to decide its outcome, with the task's group.
func OnRunRejected(tb testing.TB, f func(groupKey string)) {
	testHookRunRejected = f
	tb.Cleanup(func() { testHookRunRejected = nil })
}

// PressureArmed reports whether e's age timer is armed.
func PressureArmed(e *GroupExecutor) bool {
	e.pressure.mu.Lock()
	defer e.pressure.mu.Unlock()
	return e.pressure.armed
}
