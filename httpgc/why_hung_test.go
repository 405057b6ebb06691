package httpgc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// Each part of "hung" on its own, with the others held: a group is hung
// when it runs at its limit, its oldest task has run LongRun or more, and
// no task of it finished in the last LongRun. The handler's default
// LongRun is 10 s, and its first sample is taken as it is made. A group's
// samples begin when it first has a task, and it is not hung before they
// reach LongRun back.

// hungFixture returns an executor whose groups have concurrency limit,
// its handler with the default Options, and when the bubble began.
func hungFixture(t *testing.T, limit int) (*groupconc.GroupExecutor, *httpgc.Handler, time.Time) {
	began := time.Now()
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(limit))
	h, err := httpgc.New(e, httpgc.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return e, h, began
}

// hungAt reports the "hung" of key's row once fake time reaches at, since
// the bubble began.
func hungAt(t *testing.T, h *httpgc.Handler, key string, at time.Duration, began time.Time) bool {
	t.Helper()
	time.Sleep(at - time.Since(began))
	synctest.Wait()
	return rowOf(t, h, key)["hung"].(bool)
}

func TestAGroupWhoseTaskFinishedWithinLongRunIsNotHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, h, began := hungFixture(t, 2)
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "g", gate.Task)
		adaptertest.Submit(t, e, "g", adaptertest.Sleeper(25*time.Second))
		adaptertest.Submit(t, e, "g", gate.Task)

		// At 30.5 s the group is at its limit and its oldest task has run
		// 30.5 s, but a task finished at 25 s: 5.5 s ago, after the
		// sample taken LongRun back. The last sample saw it finished.
		assert.False(t, hungAt(t, h, "g", 30*time.Second+500*time.Millisecond, began),
			"a task finished since the sample LongRun back")
		// At 36.5 s the sample LongRun back, at 26 s, saw it finished too.
		assert.True(t, hungAt(t, h, "g", 36*time.Second+500*time.Millisecond, began),
			"no task finished since the sample LongRun back")
	})
}

func TestAGroupBelowItsLimitIsNotHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, h, began := hungFixture(t, 3)
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "g", gate.Task)
		adaptertest.Submit(t, e, "g", gate.Task)

		assert.False(t, hungAt(t, h, "g", 15*time.Second, began), "two of its three permits are held")
		adaptertest.Submit(t, e, "g", gate.Task)
		assert.True(t, hungAt(t, h, "g", 15*time.Second, began), "all three are held")
	})
}

func TestAGroupWhoseOldestTaskRanExactlyLongRunIsHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, h, began := hungFixture(t, 1)
		// A task running from 0 to 2 s puts the group in the samples
		// from 0, so one is held from LongRun before the next task has
		// run LongRun.
		adaptertest.Submit(t, e, "g", adaptertest.Sleeper(2*time.Second)).Wait()
		time.Sleep(3 * time.Second)
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "g", gate.Task)

		assert.False(t, hungAt(t, h, "g", 15*time.Second-time.Nanosecond, began), "its task has run just short of LongRun")
		assert.True(t, hungAt(t, h, "g", 15*time.Second, began), "its task has run LongRun")
	})
}

// The tasks that finished are counted by outcome, and a group's failed and
// cancelled tasks count as finished as its succeeded ones do.
func TestAGroupWhoseTasksFailedOrWereCancelledLongAgoIsHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, h, began := hungFixture(t, 1)
		boom := errors.New("boom")
		adaptertest.Submit(t, e, "g", func(context.Context) (int, error) { return 0, boom }).Wait()
		for range 2 {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			adaptertest.SubmitCtx(t, ctx, e, "g", adaptertest.OK).Wait()
		}
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "g", gate.Task)

		row := rowOf(t, h, "g")
		require.Equal(t, []any{0.0, 1.0, 2.0}, []any{row["succeeded"], row["failed"], row["cancelled"]})
		assert.True(t, hungAt(t, h, "g", 15*time.Second, began), "nothing finished in the last LongRun")
	})
}
