package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// Under fair share the choice among waiting groups is made when a permit
// is free to hand. heavy and light each hold 4 of 8, and heavy's next
// task of cost 4 would win their tie. A permit light frees then goes to
// light, which holds fewer, not to heavy's task chosen while none was
// free. So it is at the global cap and at a parent's limit.
func TestCostFairShareChoosesWhenAPermitIsFree(t *testing.T) {
	t.Run("global cap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			choosesWhenAPermitIsFree(t, builder().GlobalMaxInFlight(8), "heavy", "light")
		})
	})
	t.Run("parent's limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := builder().ParentSeparator("/").PerGroupMaxConcurrency(map[string]int{"t": 8})
			choosesWhenAPermitIsFree(t, b, "t/heavy", "t/light")
		})
	})
}

// choosesWhenAPermitIsFree runs TestCostFairShareChoosesWhenAPermitIsFree
// on b, where heavy and light share a limit of 8.
func choosesWhenAPermitIsFree(t *testing.T, b *groupconc.PolicyBuilder, heavy, light string) {
	e := newExecutor(t, b.Isolation(groupconc.IsolationFairShare).DefaultMaxConcurrencyPerGroup(100))
	var (
		ks []*gatedTask
		hs []*groupconc.TaskHandle[int]
	)
	add := func(key string, cost int) *gatedTask {
		k := newGatedTask(t, 0)
		ks = append(ks, k)
		hs = append(hs, submitGated(t, e, key, "", k, groupconc.SubmitOptions{Cost: cost}))
		synctest.Wait()
		return k
	}
	a1 := add(heavy, 4)
	l1 := add(light, 1)
	for range 3 {
		add(light, 1)
	}
	a2, a3, l5 := add(heavy, 4), add(heavy, 4), add(light, 1)
	add(light, 1)
	a1.Release()
	synctest.Wait()
	assert.True(t, a2.started.Load(), "heavy held fewer")
	l1.Release()
	synctest.Wait()
	assert.True(t, l5.started.Load(), "light held fewer")
	assert.False(t, a3.started.Load())
	assert.Equal(t, 4, groupStats(t, e, light).RunningCost)
	for _, k := range ks {
		k.Release()
	}
	quiesce(t, e, hs...)
}
