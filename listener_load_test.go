package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// loadExecutor is one executor of the mixed load, with what the test
// needs to check it afterwards.
type loadExecutor struct {
	name    string
	e       *groupconc.GroupExecutor
	rec     *recorder
	mu      sync.Mutex
	handles []*groupconc.TaskHandle[int] // guarded by mu
	cancel  []*groupconc.TaskHandle[int] // guarded by mu; to cancel by handle
}

func (x *loadExecutor) add(h *groupconc.TaskHandle[int], byHandle bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.handles = append(x.handles, h)
	if byHandle {
		x.cancel = append(x.cancel, h)
	}
}

// taskIndex returns n for a task ID "t<n>".
func taskIndex(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "t"))
	return n
}

func TestListenerEventsBalanceUnderAConcurrentMixedLoad(t *testing.T) {
	const (
		groups     = 4
		submitters = 4
		perSubmit  = 12
	)
	synctest.Test(t, func(t *testing.T) {
		errBoom := errors.New("boom")
		release := make(chan struct{})
		ctx, cancelCtx := context.WithCancel(t.Context())
		defer cancelCtx()

		handler := func(ctx context.Context, r *groupconc.Rejection) (any, error) {
			switch taskIndex(r.TaskID) % 4 {
			case 0:
				return r.Run(ctx)
			case 1:
				return 99, nil
			case 2:
				return nil, groupconc.ErrRejected
			default:
				panic("handler boom")
			}
		}
		base := func(rec *recorder) *groupconc.PolicyBuilder {
			return groupconc.NewPolicyBuilder().
				DefaultMaxConcurrencyPerGroup(2).
				DefaultQueueThresholdPerGroup(2).
				GlobalMaxInFlight(6).
				GlobalQueueThreshold(3).
				TaskLifecycleListener(rec)
		}
		var xs []*loadExecutor
		for _, c := range []struct {
			name    string
			policy  groupconc.RejectionPolicy
			handler groupconc.RejectionHandler
		}{
			{"abort", groupconc.RejectAbort, nil},
			{"discard", groupconc.RejectDiscard, nil},
			{"caller-runs", groupconc.RejectCallerRuns, nil},
			{"handler", groupconc.RejectAbort, handler},
		} {
			rec := newRecorder()
			e := newExecutor(t, base(rec).RejectionPolicy(c.policy).RejectionHandler(c.handler))
			xs = append(xs, &loadExecutor{name: c.name, rec: rec, e: e})
		}

		// Every task waits for release (or its context), then succeeds,
		// fails or panics by its index; kinds 3 and 4 are cancelled, by
		// handle and by context, before release.
		task := func(i int) groupconc.Task[int] {
			return func(ctx context.Context) (int, error) {
				select {
				case <-release:
				case <-ctx.Done():
					return 0, ctx.Err()
				}
				switch i % 5 {
				case 1:
					return 0, errBoom
				case 2:
					panic(fmt.Sprintf("task %d", i))
				}
				return i, nil
			}
		}
		var wg sync.WaitGroup
		for _, x := range xs {
			for s := range submitters {
				wg.Go(func() {
					for j := range perSubmit {
						i := s*perSubmit + j
						taskCtx := t.Context()
						if i%5 == 4 {
							taskCtx = ctx
						}
						h, err := groupconc.Submit(taskCtx, x.e, "g"+strconv.Itoa(i%groups), "t"+strconv.Itoa(i), task(i))
						if !assert.NoError(t, err) {
							return
						}
						x.add(h, i%5 == 3)
					}
				})
			}
		}
		wg.Wait()
		synctest.Wait()
		for _, x := range xs {
			for _, h := range x.cancel {
				h.Cancel()
			}
		}
		cancelCtx()
		synctest.Wait()
		close(release)
		for _, x := range xs {
			quiesce(t, x.e, x.handles...)
			checkBalanced(t, x)
		}
	})
}

// checkBalanced checks a quiescent executor of the mixed load: each task's
// events come in one of the orders the contract allows, submitted ==
// completed + rejected-and-never-run, started == completed less the tasks
// cancelled before they started, and the outcome counters add up.
func checkBalanced(t *testing.T, x *loadExecutor) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	var (
		submitted, started, completed, rejectedNeverRun, cancelledBeforeStart int
		byStatus                                                              = map[groupconc.TaskStatus]uint64{}
	)
	allowed := map[string]bool{
		// Ran, on its permits.
		"submitted started completed": true,
		// Cancelled while waiting.
		"submitted completed": true,
		// Rejected, and not run: abort, discard, a handler that did not
		// call Run, caller-runs on a done context.
		"submitted rejected": true,
		// Rejected and run anyway: caller-runs, Rejection.Run.
		"submitted rejected started completed": true,
	}
	for _, h := range x.handles {
		g, id := h.GroupKey(), h.TaskID()
		r := h.Wait()
		byStatus[r.Status]++
		evs := x.rec.Events(g, id)
		seq := strings.Join(evs, " ")
		if !assert.True(t, allowed[seq], "%s: %s/%s: events %q", x.name, g, id, seq) {
			continue
		}
		for _, ev := range evs {
			switch ev {
			case evSubmitted:
				submitted++
			case evStarted:
				started++
			case evCompleted:
				completed++
			}
		}
		switch seq {
		case "submitted rejected":
			rejectedNeverRun++
		case "submitted completed":
			cancelledBeforeStart++
			got, _ := x.rec.Result(g, id)
			assert.Equal(t, groupconc.StatusCancelled, got.Status, "%s: %s/%s: completed without starting", x.name, g, id)
		}
		if got, ok := x.rec.Result(g, id); ok {
			assert.Equal(t, r.Status, got.Status, "%s: %s/%s: OnCompleted status, handle status", x.name, g, id)
		}
	}
	assert.Equal(t, len(x.handles), submitted, "%s: submitted events, accepted submits", x.name)
	assert.Equal(t, x.rec.Count(evSubmitted), submitted, "%s: submitted events of unknown tasks", x.name)
	assert.Equal(t, submitted, completed+rejectedNeverRun, "%s: submitted, completed + rejected-never-run", x.name)
	assert.Equal(t, started, completed-cancelledBeforeStart, "%s: started, completed - cancelled-before-start", x.name)
	assert.Positive(t, x.rec.Count(evRejected), "%s: the load should reject tasks", x.name)
	assert.Positive(t, started, "%s: the load should run tasks", x.name)

	s := x.e.Stats()
	assert.Equal(t, uint64(len(x.handles)), s.Submitted, "%s: Stats.Submitted", x.name)
	assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "%s: outcomes", x.name)
	assert.Equal(t, byStatus[groupconc.StatusSuccess], s.Succeeded, "%s: Stats.Succeeded", x.name)
	assert.Equal(t, byStatus[groupconc.StatusFailed], s.Failed, "%s: Stats.Failed", x.name)
	assert.Equal(t, byStatus[groupconc.StatusCancelled], s.Cancelled, "%s: Stats.Cancelled", x.name)
	assert.Equal(t, byStatus[groupconc.StatusRejected], s.Rejected, "%s: Stats.Rejected", x.name)
	assert.Zero(t, s.Running, "%s: running", x.name)
	assert.Zero(t, s.Waiting, "%s: waiting", x.name)
	assert.Zero(t, s.GlobalInFlight, "%s: global in flight", x.name)
}
