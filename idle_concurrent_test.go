package groupconc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// Groups idle for twice the TTL are gone when each call started then
// returns. Calls that start together find one look under way. They wait
// for it, and none returns while the groups remain.
func TestIdleGroupsAreGoneByTheTimeEveryConcurrentCallReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().IdleGroupTTL(time.Millisecond)))
		defer e.Close()
		for round := range 10 {
			for i := range 3000 {
				submit(t, t.Context(), e, fmt.Sprint("k", i), "x", func(context.Context) (int, error) { return 0, nil })
			}
			synctest.Wait()
			time.Sleep(2 * time.Millisecond) // fake clock: inside the bubble
			start := make(chan struct{})
			var wg sync.WaitGroup
			got := make([]int, 4)
			for j := range got {
				wg.Go(func() {
					<-start
					if j%2 == 0 {
						got[j] = e.Stats().Groups
						return
					}
					for range e.AllGroupStats() {
						got[j]++
					}
				})
			}
			close(start)
			wg.Wait()
			assert.Equal(t, []int{0, 0, 0, 0}, got, "round %d: groups each call saw, idle for 2×TTL", round)
		}
	})
}
