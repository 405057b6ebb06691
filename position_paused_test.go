package groupconc_test

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A task waits first at the pause nearest it. a of acme/u1 waits in
// acme's pause line, behind s of acme/u2, when u1 is paused too. It waits
// at u1's pause first, where s never comes. b, submitted after it, comes
// after it there. Position names u1's pause for both. It counts those
// served there before each, in whichever line they stand now. u1 runs
// one task at a time, so a starting first shows it was served first.
func TestPositionCountsTheTasksAheadAtTheNearestPause(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, first := range []string{"acme", "acme/u1"} {
			t.Run("resume "+first+" first", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, tenants(mode).PerGroupMaxConcurrency(map[string]int{"acme/u1": 1}))
					quiesce(t, e, submit(t, t.Context(), e, "acme/u1", "first", succeed))
					var log startLog
					pause(t, e, "acme", true)
					s := submit(t, t.Context(), e, "acme/u2", "s", log.task("s"))
					a := submit(t, t.Context(), e, "acme/u1", "a", log.task("a"))
					pause(t, e, "acme/u1", true)
					b := submit(t, t.Context(), e, "acme/u1", "b", log.task("b"))
					synctest.Wait()
					at := func(group string, ahead int) groupconc.WaitPosition {
						return groupconc.WaitPosition{Limit: "paused", Group: group, Ahead: ahead}
					}
					assert.Equal(t, at("acme", 0), position(t, s))
					assert.Equal(t, at("acme/u1", 0), position(t, a), "s waits at acme's pause only")
					assert.Equal(t, at("acme/u1", 1), position(t, b), "a was submitted first")

					pause(t, e, first, false)
					synctest.Wait()
					if first == "acme" { // s started, and a moved to u1's line
						assert.Equal(t, at("acme/u1", 0), position(t, a))
						assert.Equal(t, at("acme/u1", 1), position(t, b))
					} else { // b moved to acme's line
						assert.Equal(t, at("acme", 1), position(t, a))
						assert.Equal(t, at("acme", 2), position(t, b))
					}
					pause(t, e, map[string]string{"acme": "acme/u1", "acme/u1": "acme"}[first], false)
					quiesce(t, e, s, a, b)
					assert.Less(t, slices.Index(log.order(), "a"), slices.Index(log.order(), "b"))
				})
			})
		}
	})
}
