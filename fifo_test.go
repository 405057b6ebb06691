package groupconc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWaitingTasksOfAGroupRunInSubmitOrder: with limit 1, tasks submitted
// one after another run in that order, whatever order the scheduler runs
// their goroutines in.
func TestWaitingTasksOfAGroupRunInSubmitOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		var mu sync.Mutex
		var order []string
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for i := range 20 {
			id := fmt.Sprint(i)
			h, err := groupconc.Submit(t.Context(), e, "g", id, func(ctx context.Context) (int, error) {
				mu.Lock()
				order = append(order, id)
				mu.Unlock()
				if i == 0 {
					<-gate
				}
				return i, nil
			})
			require.NoError(t, err)
			hs = append(hs, h)
		}
		synctest.Wait()
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
		want := make([]string, 20)
		for i := range want {
			want[i] = fmt.Sprint(i)
		}
		assert.Equal(t, want, order)
	})
}
