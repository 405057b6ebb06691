package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

// Priority in fake time, as the fairness measurements: each task works by
// sleeping fairService. Run them with
//
//	go test -run 'Fairness|Priority' -v ./benchmarks

// TestPriorityAHighTaskStartsNextBehindAThousandLowOnes measures, in one
// group of concurrency 1 with 1 000 PriorityLow tasks waiting, how long a
// PriorityHigh task submitted 3ms into the running task's 10ms waits to
// start: what is left of the running task, since it starts next. At one
// priority it would wait for the whole backlog.
func TestPriorityAHighTaskStartsNextBehindAThousandLowOnes(t *testing.T) {
	for _, c := range []struct {
		mode groupconc.IsolationMode
		prio groupconc.Priority
		want time.Duration // -1: no promise
	}{
		{groupconc.IsolationOff, groupconc.PriorityHigh, fairService},
		{groupconc.IsolationFairShare, groupconc.PriorityHigh, fairService},
		{groupconc.IsolationOff, groupconc.PriorityLow, -1}, // one priority: behind the backlog
	} {
		var wait time.Duration
		var before int
		synctest.Test(t, func(t *testing.T) { wait, before = highBehindLow(t, c.mode, c.prio) })
		t.Logf("%-10s task at %-4v behind 1 000 low: waits %v to start, %d low tasks start before it", c.mode, c.prio, wait, before)
		if c.want >= 0 && (wait > c.want || before != 0) {
			t.Errorf("%v: the %v task waited %v with %d low tasks started before it, want <= %v and none",
				c.mode, c.prio, wait, before, c.want)
		}
	}
}

func highBehindLow(t *testing.T, mode groupconc.IsolationMode, prio groupconc.Priority) (time.Duration, int) {
	b := groupconc.NewPolicyBuilder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1)
	if mode == groupconc.IsolationFairShare {
		b.GlobalMaxInFlight(fairCap) // the fair line serves only under a global cap
	}
	e := newExecutor(t, b)
	running := submitN(t, e, "g", 1, 0)
	low := submitN(t, e, "g", 1000, groupconc.PriorityLow)
	time.Sleep(3 * time.Millisecond)
	high := submitN(t, e, "g", 1, prio)[0].Wait()
	before := 0
	for _, h := range low {
		if h.Wait().Start.Before(high.Start) {
			before++
		}
	}
	running[0].Wait()
	require(t, e.Shutdown(context.Background()))
	return high.QueueWait(), before
}

// Spike: a steady stream of high tasks at half the group's capacity, and a
// spike of low ones at 12 times their rate for a second, into one group of
// concurrency 4 and queue threshold 64.
const (
	spikeConc      = 4
	spikeThreshold = 64
	spikeHigh      = 400                  // one every spikeEvery for 2s
	spikeEvery     = 5 * time.Millisecond // half of 4 slots / 10ms
	spikeFrom      = 500 * time.Millisecond
	spikeLow       = 12 * 200 // 12× the high rate for 1s
)

// spikeRun is what one spike run saw, per class of task.
type spikeRun struct {
	high, low   spikeClass
	highWaits   []time.Duration // of the high tasks that ran
	p50, p99, m time.Duration
}

type spikeClass struct {
	submitted, ran, displaced, rejected int
}

// TestPriorityHighStreamGoesThroughALowSpike measures the high stream's
// wait to start and what is turned away, under RejectDiscardOldest with
// the two priorities, and, for comparison, with every task at one priority
// under RejectDiscardOldest and under RejectDiscard (the second release).
// With the priorities, no high task is turned away (a high task finding
// the queue full displaces the oldest low one), low tasks are displaced
// (so low ones waited throughout the spike), and the high tasks' p99 wait
// to start is within two service times.
func TestPriorityHighStreamGoesThroughALowSpike(t *testing.T) {
	for _, c := range []struct {
		name   string
		prios  bool
		policy groupconc.RejectionPolicy
		check  bool
	}{
		{"high and low priority, RejectDiscardOldest", true, groupconc.RejectDiscardOldest, true},
		{"one priority, RejectDiscardOldest", false, groupconc.RejectDiscardOldest, false},
		{"one priority, RejectDiscard", false, groupconc.RejectDiscard, false},
	} {
		var r spikeRun
		synctest.Test(t, func(t *testing.T) { r = spike(t, c.prios, c.policy) })
		t.Logf("%-42s high: %d submitted, %d ran, %d displaced, %d rejected, wait p50 %v p99 %v max %v; low: %d submitted, %d ran, %d displaced, %d rejected",
			c.name, r.high.submitted, r.high.ran, r.high.displaced, r.high.rejected, r.p50, r.p99, r.m,
			r.low.submitted, r.low.ran, r.low.displaced, r.low.rejected)
		if !c.check {
			continue
		}
		if r.high.displaced+r.high.rejected != 0 || r.high.ran != spikeHigh {
			t.Errorf("%s: %d of %d high tasks ran, %d displaced, %d rejected; want all run", c.name,
				r.high.ran, spikeHigh, r.high.displaced, r.high.rejected)
		}
		if r.low.displaced == 0 {
			t.Errorf("%s: no low task displaced: the spike never filled the queue", c.name)
		}
		if r.p99 > 2*fairService {
			t.Errorf("%s: high tasks' p99 wait %v, want <= %v", c.name, r.p99, 2*fairService)
		}
	}
}

func spike(t *testing.T, prios bool, policy groupconc.RejectionPolicy) spikeRun {
	e := newExecutor(t, groupconc.NewPolicyBuilder().RejectionPolicy(policy).
		DefaultMaxConcurrencyPerGroup(spikeConc).DefaultQueueThresholdPerGroup(spikeThreshold))
	highPrio, lowPrio := groupconc.Priority(0), groupconc.Priority(0)
	if prios {
		highPrio, lowPrio = groupconc.PriorityHigh, groupconc.PriorityLow
	}
	stream := func(class string, n int, from, every time.Duration, prio groupconc.Priority) []*groupconc.TaskHandle[struct{}] {
		hs := make([]*groupconc.TaskHandle[struct{}], n)
		time.Sleep(from) // fake clock
		for i := range hs {
			h, err := groupconc.SubmitWith(context.Background(), e, "g", fmt.Sprint(class, "-", i), serve,
				groupconc.SubmitOptions{Priority: prio})
			require(t, err)
			hs[i] = h
			time.Sleep(every)
		}
		return hs
	}
	var high, low []*groupconc.TaskHandle[struct{}]
	var wg sync.WaitGroup
	wg.Go(func() { high = stream("high", spikeHigh, 0, spikeEvery, highPrio) })
	wg.Go(func() { low = stream("low", spikeLow, spikeFrom, spikeEvery/12, lowPrio) })
	wg.Wait()
	var r spikeRun
	count := func(c *spikeClass, hs []*groupconc.TaskHandle[struct{}], waits *[]time.Duration) {
		for _, h := range hs {
			res := h.Wait()
			c.submitted++
			switch res.Status {
			case groupconc.StatusSuccess:
				c.ran++
				if waits != nil {
					*waits = append(*waits, res.QueueWait())
				}
			case groupconc.StatusRejected:
				if strings.Contains(res.Err.Error(), groupconc.ReasonDisplaced) {
					c.displaced++
				} else {
					c.rejected++
				}
			default:
				t.Errorf("task %s ended %v: %v", h.TaskID(), res.Status, res.Err)
			}
		}
	}
	count(&r.high, high, &r.highWaits)
	count(&r.low, low, nil)
	require(t, e.Shutdown(context.Background()))
	slices.Sort(r.highWaits)
	if n := len(r.highWaits); n > 0 {
		r.p50, r.p99, r.m = r.highWaits[n/2], r.highWaits[(n*99+99)/100-1], r.highWaits[n-1]
	}
	return r
}
