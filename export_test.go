package groupconc

import (
	"errors"
	"fmt"

	"github.com/kobe/groupconc/internal/groupstate"
)

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

func quietGlobal(gl *groupstate.Global[task]) error {
	running, waiting, _ := gl.Counts()
	inFlight, slots := gl.Held()
	if running|waiting|inFlight|slots != 0 {
		return fmt.Errorf("global: %d running, %d waiting, %d permits and %d queue slots held", running, waiting, inFlight, slots)
	}
	return nil
}

func quietGroup(g *groupstate.Group[task]) error {
	bulkhead, conc, slots := g.Held()
	_, waiting, _ := g.Counts()
	if bulkhead|conc|slots|waiting != 0 {
		return fmt.Errorf("group %q: %d waiting, %d bulkhead and %d concurrency permits and %d queue slots held", g.Key(), waiting, bulkhead, conc, slots)
	}
	return nil
}
