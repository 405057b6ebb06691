package adapt_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

// callers is n closed-loop callers of group: each submits task with opts
// (and a context of timeout, if set), waits for it and submits again.
type callers struct {
	n       int
	group   string
	task    groupconc.Task[int]
	opts    groupconc.SubmitOptions
	timeout time.Duration
}

// underLoad runs the callers on an executor of b, in fake time, and
// returns what sample reads of it every 100 ms, ticks times.
func underLoad(t *testing.T, b *groupconc.PolicyBuilder, cs []callers, ticks int, sample func(*groupconc.GroupExecutor) int) []int {
	var got []int
	synctest.Test(t, func(t *testing.T) {
		p, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		e := groupconc.New(p)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var id atomic.Int64
		call := func(c callers) bool {
			cctx, cancel := ctx, context.CancelFunc(func() {})
			if c.timeout > 0 {
				cctx, cancel = context.WithTimeout(ctx, c.timeout)
			}
			defer cancel()
			h, err := groupconc.SubmitWith(cctx, e, c.group, fmt.Sprint(id.Add(1)), c.task, c.opts)
			if err != nil {
				return false
			}
			h.Wait()
			return true
		}
		for _, c := range cs {
			for range c.n {
				wg.Go(func() {
					for ctx.Err() == nil && call(c) {
					}
				})
			}
		}
		for range ticks {
			time.Sleep(100 * time.Millisecond) // fake clock
			got = append(got, sample(e))
		}
		stop()
		wg.Wait()
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	return got
}
