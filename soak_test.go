package groupconc_test

// The soak test (RELIABILITY §4.2 item 8): many tasks with mixed outcomes,
// from many submitters, over many groups, with eviction, group-shutdown and
// UpdatePolicy churn, in real time, in both isolation modes, and the oracle
// checked at the end. By default it runs at a small size that takes a few
// seconds under -race; -soak runs the full size:
//
//	go test -count=1 -run '^TestSoak' . -args -soak

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kobe/groupconc"
)

var soak = flag.Bool("soak", false, "run TestSoakMixedOutcomesWithChurn at full size (1 000 000 tasks over 1 000 groups)")

// Task kinds of the soak, by submission index modulo soakKinds.
const (
	soakFail = iota
	soakPanic
	soakGoexit
	soakPreCancelled
	soakHandleCancel
	soakCallerCancel
	soakKinds = 20 // the rest succeed
)

func TestSoakMixedOutcomesWithChurn(t *testing.T) {
	forEachMode(t, soakMixedOutcomesWithChurn)
}

// soakPolicies are the policies the soak's executor moves between with
// UpdatePolicy: each limit lowered and raised, layers going from Unlimited
// to a limit and back, and an idle TTL switched on and off. The global
// queue threshold stays Unlimited under fair share, as Build requires.
func soakPolicies(t *testing.T, mode groupconc.IsolationMode, listener groupconc.TaskLifecycleListener, handler groupconc.RejectionHandler) []*groupconc.GroupPolicy {
	u := groupconc.Unlimited
	fair := mode == groupconc.IsolationFairShare
	gq := func(n int) int {
		if fair {
			return u
		}
		return n
	}
	var ps []*groupconc.GroupPolicy
	for i, l := range []struct {
		global, globalQueue, conc, inFlight, queue, weight int
		idle                                               time.Duration
	}{
		{64, 512, 2, 4, 6, 1, 0}, // the first: the executor starts with it
		{32, 128, 1, 2, 3, 2, 0},
		{96, u, 3, u, 8, 3, 20 * time.Millisecond},
		{48, 256, 2, 3, u, 1, 0},
	} {
		b := builder().Isolation(mode).GlobalMaxInFlight(l.global).GlobalQueueThreshold(gq(l.globalQueue)).
			DefaultMaxConcurrencyPerGroup(l.conc).DefaultMaxInFlightPerGroup(l.inFlight).DefaultQueueThresholdPerGroup(l.queue).
			IdleGroupTTL(l.idle).TaskLifecycleListener(listener)
		if i == 1 {
			b.RejectionPolicy(groupconc.RejectDiscardOldest) // full queues displace the lowest priority
		} else {
			b.RejectionHandler(handler)
		}
		if fair && i > 0 {
			b.DefaultWeightPerGroup(l.weight).PerGroupWeight(map[string]int{"g0": 4})
		}
		ps = append(ps, mustBuild(t, b))
	}
	return ps
}

func soakMixedOutcomesWithChurn(t *testing.T, mode groupconc.IsolationMode) {
	total, groups, submitters := 20_000, 100, 16
	if *soak {
		total, groups = 1_000_000, 1_000
	} else if testing.Short() {
		total = 4_000
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	o := newOracle()
	o.handler = true
	// A rejected task is run (Rejection.Run), turned down, or replaced by a
	// fallback value, depending on its ID.
	handler := func(ctx context.Context, rj *groupconc.Rejection) (any, error) {
		switch rj.TaskID[len(rj.TaskID)-1] % 3 {
		case 0:
			return rj.Run(ctx)
		case 1:
			return nil, groupconc.ErrRejected
		}
		return -1, nil
	}
	policies := soakPolicies(t, mode, o.rec, handler)
	e := groupconc.New(policies[0])

	keys := make([]string, groups)
	for i := range keys {
		keys[i] = fmt.Sprintf("g%d", i)
	}
	// Groups with index%4 == 0 are never evicted, so their per-group limit
	// is checked; the others' gauges are keyed "#churn" and not checked
	// (after an eviction the old and new states may overlap, as documented).
	// The policy changes while tasks start, so the caps checked are the
	// largest any of the policies sets (FuzzOps checks the drain exactly).
	protected := func(i int) bool { return i%4 == 0 }
	var globalCap, groupCap int
	for _, p := range policies {
		globalCap = max(globalCap, p.GlobalMaxInFlight())
		groupCap = max(groupCap, min(p.ResolveConcurrency("g0"), p.ResolveMaxInFlight("g0")))
	}
	lim := oracleLimits{global: globalCap, group: func(k string) int {
		if strings.HasSuffix(k, "#churn") {
			return groupconc.Unlimited
		}
		return groupCap
	}}

	var (
		probesMu sync.Mutex
		probes   []func() error
		evicted  atomic.Int64
		stopped  atomic.Int64
		updated  atomic.Int64
		bad      atomic.Int64
	)
	badf := func(format string, args ...any) {
		if bad.Add(1) <= 20 {
			t.Errorf(format, args...)
		}
	}
	type pending struct {
		h         *groupconc.TaskHandle[int]
		kind      int
		cancelled bool
	}
	check := func(pd pending) {
		res := pd.h.Wait()
		o.final(res.Status)
		switch {
		case pd.cancelled:
			if res.Status != groupconc.StatusCancelled {
				badf("task %s: Cancel won but the result is %v", pd.h.TaskID(), res.Status)
			}
		case pd.kind == soakPreCancelled:
			if res.Status != groupconc.StatusCancelled {
				badf("task %s with a done context ended %v", pd.h.TaskID(), res.Status)
			}
		case res.Status == groupconc.StatusSuccess:
			if res.Value != 1 && res.Value != -1 {
				badf("task %s succeeded with %d", pd.h.TaskID(), res.Value)
			}
		case res.Status == groupconc.StatusFailed && (pd.kind == soakPanic || pd.kind == soakGoexit):
			var pe *groupconc.PanicError
			if !assert.ErrorAs(t, res.Err, &pe) {
				bad.Add(1)
			}
		}
	}

	start := time.Now()
	var wg sync.WaitGroup
	var gaveUp atomic.Int64 // blocking submissions that gave up waiting
	perSubmitter := total / submitters
	for s := range submitters {
		wg.Go(func() {
			ring := make([]pending, 0, 64)
			for i := range perSubmitter {
				n := s*perSubmitter + i
				gi := n % groups
				if n%10 == 0 {
					gi = n % 8 // hot groups: queues fill, rejections happen
				}
				key := keys[gi]
				gaugeKey := key
				if !protected(gi) {
					gaugeKey = key + "#churn"
				}
				kind := n % soakKinds
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				switch kind {
				case soakPreCancelled:
					ctx, cancel = context.WithCancel(ctx)
					cancel()
				case soakCallerCancel:
					ctx, cancel = context.WithCancel(ctx)
				}
				id := fmt.Sprintf("s%d-%d", s, i)
				fn := func(ctx context.Context) (int, error) {
					switch kind {
					case soakFail:
						return 0, fuzzError{}
					case soakPanic:
						panic(fuzzError{})
					case soakGoexit:
						runtime.Goexit()
					}
					runtime.Gosched()
					if err := ctx.Err(); err != nil {
						return 0, err
					}
					return 1, nil
				}
				// Every priority, and some producers that wait for room.
				opts := groupconc.SubmitOptions{Priority: groupconc.Priority(n % 6), Block: n%7 == 3, MaxWait: time.Millisecond}
				h, err := groupconc.SubmitWith(ctx, e, key, id, oracleTask(o, gaugeKey, key, id, fn), opts)
				if err != nil {
					cancel()
					if opts.Block && (errors.Is(err, context.Canceled) || errors.Is(err, groupconc.ErrGroupEvicted) || errors.Is(err, groupconc.ErrGroupShutdown)) {
						gaveUp.Add(1) // the wait ended before a slot came: nothing was submitted
						continue
					}
					badf("Submit %s: %v", id, err)
					continue
				}
				pd := pending{h: h, kind: kind}
				if kind == soakHandleCancel {
					pd.cancelled = h.Cancel()
				}
				cancel() // a no-op but for soakCallerCancel
				// Churn, concurrent with the other submitters.
				if n%997 == 0 {
					if ci := (n / 997) % groups; !protected(ci) {
						if probe, ok := e.GroupProbe(keys[ci]); ok {
							probesMu.Lock()
							probes = append(probes, probe)
							probesMu.Unlock()
						}
						e.EvictGroup(keys[ci])
						evicted.Add(1)
					}
				}
				if n%499 == 0 {
					e.ShutdownGroup(keys[(n/499)%groups])
					stopped.Add(1)
				}
				if n%1499 == 0 {
					if err := e.UpdatePolicy(policies[(n/1499)%len(policies)]); err != nil {
						badf("UpdatePolicy: %v", err)
					}
					updated.Add(1)
				}
				if len(ring) == cap(ring) {
					check(ring[0])
					ring = append(ring[:0], ring[1:]...)
				}
				ring = append(ring, pd)
			}
			for _, pd := range ring {
				check(pd)
			}
		})
	}
	wg.Wait()
	submitted := time.Since(start)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(t, e.Shutdown(ctx), "I7: the drain must finish")
	o.seal()
	elapsed := time.Since(start)

	o.checkLimits(t, lim)
	o.checkQuiescent(t, e)
	o.checkResults(t, e)
	o.checkEvents(t)
	for i, probe := range probes {
		assert.NoError(t, probe(), "I2: evicted group state %d", i)
	}
	assert.LessOrEqual(t, o.globalMax(), int64(globalCap))
	s := e.Stats()
	t.Logf("%v: %d tasks over %d groups from %d submitters in %v (%v submitting; %.0f tasks/s): %d evictions, %d group shutdowns, %d policy updates; succeeded %d, failed %d, cancelled %d, rejected %d; max running %d global, %d outside permits",
		mode, s.Submitted, groups, submitters, elapsed.Round(time.Millisecond), submitted.Round(time.Millisecond), float64(s.Submitted)/elapsed.Seconds(),
		evicted.Load(), stopped.Load(), updated.Load(), s.Succeeded, s.Failed, s.Cancelled, s.Rejected, o.globalMax(), o.gauges.outside.max.Load())
	assert.EqualValues(t, perSubmitter*submitters-int(gaveUp.Load()), s.Submitted)
}
