package adapt_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// samples is an AdaptiveLimit that keeps its samples and wants no change.
type samples struct {
	mu sync.Mutex
	s  []groupconc.LimitSample // guarded by mu
}

func (r *samples) new(string, int, int) groupconc.AdaptiveLimit { return r }

func (r *samples) Observe(s groupconc.LimitSample) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s = append(r.s, s)
	return s.Limit
}

// A Do is sampled as a task is. One its caller cancels while it runs is
// no drop: both algorithms ignore it. One whose caller's deadline passes
// while it runs signals overload to both. One whose function panics gives
// no sample, as a task that never returned.
func TestADoCancelledByItsCallerIsNoDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := new(samples)
		p, err := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4).
			AdaptiveConcurrency(groupconc.AdaptiveConfig{New: r.new}).Build()
		require.NoError(t, err)
		e := groupconc.New(p)
		defer e.Close()
		untilDone := func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(10*time.Millisecond, cancel)
		_, err = groupconc.Do(ctx, e, "g", untilDone, groupconc.SubmitOptions{})
		assert.ErrorIs(t, err, context.Canceled)

		ctx, cancel = context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		_, err = groupconc.Do(ctx, e, "g", untilDone, groupconc.SubmitOptions{})
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		assert.Panics(t, func() {
			groupconc.Do(t.Context(), e, "g", func(context.Context) (int, error) {
				time.Sleep(time.Millisecond)
				panic("boom")
			}, groupconc.SubmitOptions{})
		})

		r.mu.Lock()
		defer r.mu.Unlock()
		require.Len(t, r.s, 2, "the panic gives none")
		cancelled, timedOut := r.s[0], r.s[1]
		assert.Equal(t, groupconc.StatusCancelled, cancelled.Status)
		assert.Equal(t, 10*time.Millisecond, cancelled.RunTime)
		assert.Equal(t, adapt.Ignore, adapt.DefaultClassify(cancelled), "Gradient")
		assert.Equal(t, adapt.Ignore, adapt.FailuresOverload(cancelled), "AIMD")
		assert.Equal(t, groupconc.StatusCancelled, timedOut.Status)
		assert.Equal(t, 20*time.Millisecond, timedOut.RunTime)
		assert.Equal(t, adapt.Overload, adapt.DefaultClassify(timedOut), "Gradient")
		assert.Equal(t, adapt.Overload, adapt.FailuresOverload(timedOut), "AIMD")
	})
}
