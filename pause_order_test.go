package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A child's task that waited for its parent's limit, then was parked by a
// pause of the child, keeps its place in the parent's line on resume
// under IsolationOff: a task of the parent that came during the pause
// does not go ahead of it.
func TestAResumedChildsTaskKeepsItsPlaceInItsParentsLine(t *testing.T) {
	for _, how := range []string{"release", "raise"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := func(limit int) *groupconc.PolicyBuilder {
					return builder().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
						PerGroupMaxConcurrency(map[string]int{"t": limit})
				}
				e := newExecutor(t, b(2))
				k, a, c := newGatedTask(t, 0), newGatedTask(t, 1), newGatedTask(t, 2)
				hk := submitGated(t, e, "t", "k", k, groupconc.SubmitOptions{})
				ha := submitGated(t, e, "t/a", "a", a, groupconc.SubmitOptions{Cost: 2}) // waits for t
				on, off := true, false
				require.NoError(t, e.SetGroupOverride("t/a", groupconc.GroupOverride{Paused: &on}))
				hc := submitGated(t, e, "t", "c", c, groupconc.SubmitOptions{Cost: 2}) // comes during the pause
				require.NoError(t, e.SetGroupOverride("t/a", groupconc.GroupOverride{Paused: &off}))
				synctest.Wait()
				require.False(t, a.started.Load() || c.started.Load(), "nothing fits yet")
				if how == "release" {
					k.Release()
				} else {
					upUpdate(t, e, b(3))
				}
				synctest.Wait()
				assert.True(t, a.started.Load(), "a, resumed, came first")
				assert.False(t, c.started.Load(), "c went ahead of a")
				k.Release()
				a.Release()
				c.Release()
				quiesce(t, e, hk, ha, hc)
			})
		})
	}
}
