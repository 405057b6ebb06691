package groupconc_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Once a task's context reports an error, its Done channel is closed, as
// the standard library's contexts promise. The caller's cancel races the
// first Done call, which builds the channel, on another goroutine.
func TestATaskContextsDoneIsClosedOnceItsErrReportsTheEnd(t *testing.T) {
	e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(64))
	for range 2000 {
		caller, cancel := context.WithCancel(t.Context())
		open := make(chan bool, 1)
		h := submit(t, caller, e, "g", "t", func(ctx context.Context) (int, error) {
			var wg sync.WaitGroup
			wg.Go(func() { ctx.Done() }) // builds it, maybe as the cancel comes
			wg.Go(cancel)
			for ctx.Err() == nil {
				runtime.Gosched()
			}
			select {
			case <-ctx.Done():
				open <- false
			default:
				open <- true
			}
			wg.Wait()
			return 0, nil
		})
		h.Wait()
		require.False(t, <-open, "Err reported %v while Done was open", context.Canceled)
	}
	assert.NoError(t, e.Quiescent())
}
