package groupconc

import (
	"errors"

	"github.com/kobe/groupconc/internal/groupstate"
)

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
