package groupconc

import (
	"errors"
	"unsafe"

	"github.com/kobe/groupconc/internal/groupstate"
)

// Probes for the tests of package groupconc_test. They live here, not in
// the library: the library keeps no test-only code.

// Quiescent reports an error naming every semaphore of e (global, and each
// known group's) that does not have all its permits available. Call it only
// once every task has finished.
func (e *GroupExecutor) Quiescent() error {
	errs := []error{e.global.Probe()}
	e.groups.Range(func(g *groupstate.Group) bool {
		errs = append(errs, g.Probe())
		return true
	})
	return errors.Join(errs...)
}

// GroupProbe returns a probe of groupKey's current group state, or false if
// the group does not exist. The probe keeps that state: called after
// EvictGroup, it still checks the old semaphores, which the registry has
// forgotten but the old group's tasks release into. Like Quiescent, call the
// probe only once the group's tasks have all finished.
func (e *GroupExecutor) GroupProbe(groupKey string) (probe func() error, ok bool) {
	g, ok := e.groups.Lookup(groupKey)
	if !ok {
		return nil, false
	}
	return g.Probe, true
}

// HandleSize is the size of a handle whose value takes no room: what every
// Submit allocates beyond the value, and what every waiting task is.
const HandleSize = unsafe.Sizeof(TaskHandle[struct{}]{})
