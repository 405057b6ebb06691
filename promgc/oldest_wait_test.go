package promgc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

func TestOldestWaitIsTheLongestWaitOfAnyGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder())
		g := newGate(t)
		submit(t, e, "a", g.Task)
		submit(t, e, "a", g.Task) // waits from now
		time.Sleep(3 * time.Second)
		submit(t, e, "b", g.Task)
		submit(t, e, "b", g.Task) // waits 1s less
		time.Sleep(time.Second)
		requireMetrics(t, c, `groupconc_oldest_wait_seconds 4`)
		g.Release()
	})
}

func TestOldestWaitWithAGroupLabelIsTheLongestWaitOfEachValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{GroupClass: tier}, groupconc.NewPolicyBuilder())
		g := newGate(t)
		submit(t, e, "gold-1", g.Task)
		submit(t, e, "gold-1", g.Task) // waits from now
		time.Sleep(3 * time.Second)
		submit(t, e, "free-1", g.Task)
		submit(t, e, "free-1", g.Task) // waits 3s less
		submit(t, e, "gold-2", g.Task) // does not wait
		time.Sleep(time.Second)
		requireMetrics(t, c, `
			groupconc_oldest_wait_seconds{group="free"} 1
			groupconc_oldest_wait_seconds{group="gold"} 4
		`)
		g.Release()
	})
}
