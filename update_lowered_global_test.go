package groupconc_test

// Save into /work/wt-core next to update_test.go and fairshare_test.go
// (it uses their helpers) and run:
//   go test -race -count=1 -run TestUpdatePolicyGlobalCapImposedUnderLoadStartsNothingUntilRunningIsBelowItUnderIsolationOff .

import (
	"fmt"
	"testing"

	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestUpdatePolicyGlobalCapImposedUnderLoadStartsNothingUntilRunningIsBelowItUnderIsolationOff(t *testing.T) {
	upIn(t, []groupconc.IsolationMode{groupconc.IsolationOff}, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().DefaultMaxConcurrencyPerGroup(2))
		g := upNewGated()
		for i := range 4 {
			for _, key := range []string{"a", "b", "c"} {
				g.submit(t, e, key, fmt.Sprint(key, i))
				synctest.Wait()
			}
		}
		require.EqualValues(t, 6, g.running.cur.Load())

		upUpdate(t, e, b().DefaultMaxConcurrencyPerGroup(2).GlobalMaxInFlight(2))
		synctest.Wait()
		assert.EqualValues(t, 6, g.running.cur.Load(), "running tasks after the global cap fell to 2")
		assert.Equal(t, 2, e.Stats().GlobalMaxInFlight)

		// Running 5, 4, 3, 2: nothing starts; running 1: one starts.
		for i, id := range []string{"a0", "a1", "b0", "b1", "c0"} {
			g.release(id)
			want := max(5-i, 2)
			assert.EqualValues(t, want, g.running.cur.Load(), "running once %s ended", id)
		}
		assert.Len(t, g.starts.list(), 7, "tasks started in all")

		upUpdate(t, e, b().DefaultMaxConcurrencyPerGroup(2))
		synctest.Wait()
		// a2 a3 b2 b3 and two of c1 c2 c3: each group at its limit 2.
		assert.EqualValues(t, 6, g.running.cur.Load(), "running once the cap was lifted")
		assert.Equal(t, groupconc.Unlimited, e.Stats().GlobalMaxInFlight)
		g.finish(t, e)
	})
}

func TestUpdatePolicyLoweredGlobalCapStartsNothingUntilRunningIsBelowItUnderIsolationOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2) }
		e := newExecutor(t, b().GlobalMaxInFlight(12))
		g := upNewGated()
		for i := range 4 {
			for _, key := range []string{"a", "b", "c"} {
				g.submit(t, e, key, fmt.Sprint(key, i))
				synctest.Wait()
			}
		}
		require.EqualValues(t, 6, g.running.cur.Load())
		upUpdate(t, e, b().GlobalMaxInFlight(2))
		g.release("a0") // running 5 >= 2, GlobalInFlight 11 >= 2
		assert.EqualValues(t, 5, g.running.cur.Load(), "running once a0 ended under the new global cap 2; Stats %+v", e.Stats())
		g.finish(t, e)
	})
}
