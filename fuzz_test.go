package groupconc_test

// Native fuzzing (RELIABILITY §4.2 item 6). FuzzOps decodes its input into
// an isolation mode, a small policy and a sequence of operations. Among
// them are UpdatePolicy to another decoded policy, Do calls
// (fuzzdo_test.go), ExecuteAll calls (fuzz_executeall_test.go),
// ExecuteAllWith calls (fuzz_executeallwith_test.go) and fake time passing
// under an idle TTL. Some inputs have groups of groups, task costs and
// group overrides (fuzz_tree_test.go). It runs them inside a synctest
// bubble, where fake time keeps it fast and deterministic enough to
// replay. It checks the oracle, with the limits in force over time, after
// every step and at the end (fuzz_ops_test.go).
// FuzzPolicyBuilder (fuzz_policy_test.go) checks that any combination of
// builder settings either builds a policy whose Resolve* results follow the
// rules or fails with ErrInvalidPolicy naming each bad field.
//
//	go test -run '^$' -fuzz FuzzOps -fuzztime 2m .
//	go test -run '^$' -fuzz FuzzPolicyBuilder -fuzztime 2m .

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

// fuzzBytes hands out the fuzz input one byte at a time, then zeros.
type fuzzBytes struct {
	b []byte
	i int
}

func (r *fuzzBytes) next() byte {
	if r.i >= len(r.b) {
		r.i++
		return 0
	}
	v := r.b[r.i]
	r.i++
	return v
}

func (r *fuzzBytes) done() bool { return r.i >= len(r.b) }

// fuzzPick maps v onto choices.
func fuzzPick[T any](v byte, choices ...T) T { return choices[int(v)%len(choices)] }

const (
	fuzzOpSubmit = iota
	fuzzOpRelease
	fuzzOpReleaseAll
	fuzzOpCancel
	fuzzOpCancelCtx
	fuzzOpAwait
	fuzzOpShutdownGroup
	fuzzOpEvict
	fuzzOpShutdown
	fuzzOpClose
	fuzzOpSleep
	fuzzOpUpdate
	fuzzOpCount
)

// Task behaviours a submit op can ask for.
const (
	fuzzDoSucceed = iota
	fuzzDoFail
	fuzzDoPanic
	fuzzDoGoexit
	fuzzDoBlock    // until its gate opens, ignoring its context
	fuzzDoBlockCtx // until its gate opens or its context ends
	fuzzDoSleep    // fake-time work, ends early when its context ends
	fuzzDoPreCancelled
	fuzzDoCount
)

// fuzzError is the error the failing fuzz and soak tasks return (and
// panic with); errors.Is compares it by value.
type fuzzError struct{}

func (fuzzError) Error() string { return "fuzz task failed" }

// fuzzTask is what the harness knows of one accepted task.
type fuzzTask struct {
	h         *groupconc.TaskHandle[int]
	do        int
	gate      chan struct{}
	cancelCtx context.CancelFunc
	cancelled bool // a Cancel on its handle returned true
}

func FuzzOps(f *testing.F) {
	// An input is a mode byte, the policy's bytes (fuzzPolicy) and the
	// operations. Every seed runs in both modes.
	for _, seed := range [][]byte{
		{},
		// global 1, queue 0..: submits to a, b, c, releases, close
		{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoSucceed, fuzzOpRelease, 0, fuzzOpReleaseAll, fuzzOpClose},
		// every behaviour, then Shutdown with a deadline
		{2, 0, 1, 2, 2, 1, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoSucceed, fuzzOpSubmit, 0, fuzzDoFail, fuzzOpSubmit, 1, fuzzDoPanic, fuzzOpSubmit, 1, fuzzDoGoexit,
			fuzzOpSubmit, 2, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoBlockCtx, fuzzOpSubmit, 0, fuzzDoSleep, 3, fuzzOpSubmit, 0, fuzzDoPreCancelled,
			fuzzOpSleep, 5, fuzzOpShutdown, 2, fuzzOpReleaseAll, fuzzOpShutdown, 9},
		// cancels, awaits, group shutdown, eviction
		{0, 0, 0, 1, 1, 2, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlockCtx, fuzzOpSubmit, 0, fuzzDoBlockCtx, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlockCtx,
			fuzzOpCancel, 1, fuzzOpCancelCtx, 3, fuzzOpAwait, 2, 4, fuzzOpShutdownGroup, 0, fuzzOpSubmit, 0, fuzzDoBlock,
			fuzzOpEvict, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpReleaseAll, fuzzOpSleep, 1},
		// caller-runs and handlers under thresholds 0
		{1, 1, 0, 1, 1, 2, 1, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoPanic, fuzzOpSubmit, 2, fuzzDoGoexit, fuzzOpReleaseAll},
		{1, 1, 0, 1, 1, 4, 1, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlockCtx, fuzzOpSubmit, 1, fuzzDoFail, fuzzOpClose, fuzzOpReleaseAll},
		{3, 2, 1, 3, 2, 5, 0, 1, 0, 0, fuzzOpSubmit, 0, fuzzDoSleep, 9, fuzzOpSubmit, 0, fuzzDoSleep, 9, fuzzOpSubmit, 0, fuzzDoSleep, 9, fuzzOpSubmit, 1, fuzzDoSleep, 2, fuzzOpEvict, 0, fuzzOpSleep, 20},
		{2, 1, 0, 1, 2, 3, 0, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoBlockCtx, fuzzOpSubmit, 2, fuzzDoBlockCtx, fuzzOpSubmit, 2, fuzzDoBlock, fuzzOpRelease, 1, fuzzOpShutdownGroup, 2, fuzzOpReleaseAll},
		// concurrency 3 lowered to 1 while three run, then raised to
		// Unlimited: the drain, then every waiter at once
		{0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock,
			fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			fuzzOpRelease, 0, fuzzOpRelease, 1, fuzzOpSubmit, 0, fuzzDoBlock,
			fuzzOpUpdate, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, fuzzOpReleaseAll},
		// global 2 lowered to 1 and bulkhead Unlimited to 1 across groups,
		// then back
		{2, 0, 2, 0, 0, 0, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlockCtx,
			fuzzOpUpdate, 0, 1, 0, 2, 1, 0, 0, 0, 0, 0, 0,
			fuzzOpRelease, 0, fuzzOpSubmit, 1, fuzzDoSucceed, fuzzOpRelease, 1,
			fuzzOpUpdate, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, fuzzOpReleaseAll, fuzzOpSleep, 3},
		// queue thresholds lowered below the waiting count, then a
		// rejection, then raised
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock,
			fuzzOpUpdate, 0, 0, 2, 0, 0, 2, 0, 0, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoSucceed,
			fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoSucceed, fuzzOpReleaseAll},
		// live tweaks of the policy in force: DiscardOldest turned on over
		// a full queue, the global limit lowered and raised, the idle TTL
		// turned on while tasks wait and run
		{0, 1, 0, 0, 0, 1, 1, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoSucceed,
			fuzzOpUpdate, 6, 1 + 3*3, fuzzOpSubmit, 0, fuzzDoSucceed, fuzzOpUpdate, 6, 2 + 3*1, fuzzOpRelease, 0,
			fuzzOpUpdate, 6, 0 + 3*1, fuzzOpSleep, 4, fuzzOpUpdate, 6, 2, fuzzOpReleaseAll, fuzzOpSleep, 9},
		// idle TTL 1ms: groups forgotten while time passes, resolved again
		// from an updated policy
		{0, 0, 0, 0, 0, 0, 0, 0, 1, 0,
			fuzzOpSubmit, 0, fuzzDoSucceed, fuzzOpSubmit, 1, fuzzDoSleep, 4, fuzzOpSleep, 3, fuzzOpSleep, 6,
			fuzzOpUpdate, 0, 1, 0, 1, 0, 0, 0, 0, 0, 2, 1, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSleep, 12, fuzzOpRelease, 0, fuzzOpSleep, 15,
			fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, fuzzOpSleep, 15},
		// weights under fair share (ignored under IsolationOff), a
		// resolver, and refused updates
		{1, 0, 0, 0, 0, 0, 0, 0, 0, 6,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoBlock,
			fuzzOpUpdate, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 3, fuzzOpUpdate, 7, fuzzOpRelease, 0,
			fuzzOpUpdate, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 9, fuzzOpClose, fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, fuzzOpReleaseAll},
	} {
		for _, mode := range []byte{0, 1} {
			f.Add(append([]byte{mode}, seed...))
		}
	}
	for _, seed := range slices.Concat(fuzzTreeSeeds(), fuzzDoSeeds(), fuzzExecuteAllSeeds(), fuzzExecuteAllWithSeeds()) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			data = data[:512] // keep each run small
		}
		synctest.Test(t, func(t *testing.T) { fuzzRunOps(t, data) })
	})
}

// fuzzPolicy decodes a policy of the shape's mode from ten bytes: small
// limits (Unlimited among them), thresholds (including 0; the global one is
// Unlimited under fair share), every rejection policy and three handler
// behaviours, an idle TTL, and under fair share a weight setting. Its maps
// name the shape's first three keys. With parents, three more bytes set
// limits of parents and children (fuzzTreeLimits). Its listener is the
// oracle's recorder.
func fuzzPolicy(in *fuzzBytes, o *oracle, sh *fuzzShape) *groupconc.PolicyBuilder {
	u := groupconc.Unlimited
	mode := sh.mode
	a, bk, c := sh.keys[0], sh.keys[1], sh.keys[2]
	b := builder().Isolation(mode).TaskLifecycleListener(o.rec).
		GlobalMaxInFlight(fuzzPick(in.next(), u, 1, 2, 3, 4))
	if gq := fuzzPick(in.next(), u, 0, 1, 2, 3); mode == groupconc.IsolationOff {
		b.GlobalQueueThreshold(gq)
	}
	b.DefaultMaxConcurrencyPerGroup(fuzzPick(in.next(), 1, 2, 3, u))
	defInFlight := fuzzPick(in.next(), u, 1, 2, 3, 4)
	b.DefaultMaxInFlightPerGroup(defInFlight).
		DefaultQueueThresholdPerGroup(fuzzPick(in.next(), u, 0, 1, 2, 3))
	rejection := in.next() % 7
	sh.callerRuns, sh.handler = rejection == 2, rejection >= 3 && rejection <= 5
	switch rejection {
	case 0:
		b.RejectionPolicy(groupconc.RejectAbort)
	case 1:
		b.RejectionPolicy(groupconc.RejectDiscard)
	case 2:
		b.RejectionPolicy(groupconc.RejectCallerRuns)
	case 3:
		o.handler = true
		b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return nil, groupconc.ErrRejected })
	case 4:
		o.handler = true
		b.RejectionHandler(func(ctx context.Context, rj *groupconc.Rejection) (any, error) { return rj.Run(ctx) })
	case 5:
		o.handler = true
		b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return -1, nil })
	case 6:
		b.RejectionPolicy(groupconc.RejectDiscardOldest)
	}
	conc, inFlight, queue := map[string]int{}, map[string]int{}, map[string]int{}
	if v := in.next(); v%2 == 1 {
		conc[c] = 1 + int(v/2)%2
	}
	if v := in.next(); v%2 == 1 {
		queue[bk] = int(v/2) % 2
	}
	b.IdleGroupTTL(fuzzPick(in.next(), time.Duration(0), time.Millisecond, 2*time.Millisecond, 5*time.Millisecond))
	v := in.next()
	if sh.tree {
		b.ParentSeparator("/")
		if sh.resolved {
			b.ParentResolver(fuzzResolvedParent)
		}
		fuzzTreeLimits(in, conc, inFlight, queue)
	}
	if len(conc) > 0 {
		b.PerGroupMaxConcurrency(conc)
	}
	if len(inFlight) > 0 {
		b.PerGroupMaxInFlight(inFlight)
	}
	if len(queue) > 0 {
		b.PerGroupQueueThreshold(queue)
	}
	if mode != groupconc.IsolationFairShare {
		return b
	}
	w := 1 + int(v/4)%3
	switch v % 4 {
	case 1:
		b.DefaultWeightPerGroup(w)
	case 2:
		b.PerGroupWeight(map[string]int{a: w + 1})
	case 3:
		b.WeightResolver(func(k string) int {
			if k == c {
				panic("weight resolver fails for " + c)
			}
			return w - 1 // 0 for some: resolved as 1
		})
	}
	return b
}

// fuzzSource runs build, which reads a policy's bytes from in, and returns
// the bytes it read, to build the same policy again (fuzzTweak).
func fuzzSource(in *fuzzBytes, build func()) []byte {
	from := min(in.i, len(in.b))
	build()
	return in.b[from:min(in.i, len(in.b))]
}

// fuzzTweak builds the policy of src again with one setting changed that
// a task may have read when it entered: the idle TTL, the rejection
// policy or the global limit.
func fuzzTweak(src []byte, v byte, o *oracle, sh *fuzzShape) *groupconc.PolicyBuilder {
	b := fuzzPolicy(&fuzzBytes{b: src}, o, sh)
	switch w := v / 3; v % 3 {
	case 0:
		b.IdleGroupTTL(fuzzPick(w, time.Duration(0), time.Millisecond, 3*time.Millisecond))
	case 1:
		r := fuzzPick(w, groupconc.RejectAbort, groupconc.RejectDiscard, groupconc.RejectCallerRuns, groupconc.RejectDiscardOldest)
		b.RejectionPolicy(r)
		sh.callerRuns = r == groupconc.RejectCallerRuns && !sh.handler
	default:
		b.GlobalMaxInFlight(fuzzPick(w, groupconc.Unlimited, 1, 2, 3, 4))
	}
	return b
}
