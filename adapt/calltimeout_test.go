package adapt_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
	"github.com/stretchr/testify/assert"
)

// A task that gives up on its call at a deadline of its own (a client's
// timeout per call) fails with context.DeadlineExceeded, since its own
// context is not done. That is overload as much as its caller's deadline
// is: the call was abandoned, and the backend may still work on it. Were
// it ignored, Gradient would see no sample at all from a backend that
// times out every call, and keep its limit at the maximum.
func TestACallsOwnTimeoutSignalsOverload(t *testing.T) {
	wrapped := fmt.Errorf("call: %w", context.DeadlineExceeded)
	for _, err := range []error{context.DeadlineExceeded, wrapped} {
		s := groupconc.LimitSample{Status: groupconc.StatusFailed, Err: err}
		assert.Equal(t, adapt.Overload, adapt.DefaultClassify(s), "%v", err)
		assert.Equal(t, adapt.Overload, adapt.FailuresOverload(s), "%v", err)
	}
	assert.Equal(t, adapt.Ignore, adapt.DefaultClassify(groupconc.LimitSample{Status: groupconc.StatusFailed, Err: context.Canceled}), "a call cancelled is no timeout")

	call := func(ctx context.Context) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		<-ctx.Done() // a backend that never answers
		return 0, ctx.Err()
	}
	for name, algo := range map[string]func(string, int, int) groupconc.AdaptiveLimit{
		"gradient": adapt.GradientConfig{}.New,
		"aimd":     adapt.AIMDConfig{}.New,
	} {
		b := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(16).
			AdaptiveConcurrency(groupconc.AdaptiveConfig{New: algo, Min: 1})
		limits := underLoad(t, b, []callers{{n: 20, group: "g", task: call}}, 10, func(e *groupconc.GroupExecutor) int {
			s, _ := e.GroupStats("g")
			return s.MaxConcurrency
		})
		if least := slices.Min(limits); least > 2 {
			t.Errorf("%s: every call timed out for 1s, and the limit went no lower than %d of 16 (%v)", name, least, limits)
		}
	}
}
