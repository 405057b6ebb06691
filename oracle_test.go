package groupconc_test

// The reliability oracle: one reusable set of checks for the invariants
// below (I1–I8), shared by the env of helpers_test.go, fuzz_test.go and
// soak_test.go (and usable by any other test of the package).
//
//   - I1 limits: gauges raised and lowered inside each task's function
//     (oracleGauges, checkLimits) and the Stats snapshot of a still executor
//     (checkStill);
//   - I2 no permit leak: checkQuiescent (e.Quiescent, plus idle counts);
//   - I3 one terminal result per accepted Submit: checkResults, awaitAll;
//   - I4 balanced, ordered listener events: oracleRecorder, checkEvents;
//   - I5 no goroutine left: the end of synctest.Test, or goleak;
//   - I6 no panic escapes: guard around Submit, Shutdown and Close (and any
//     escaped panic in a goroutine crashes the test binary anyway).
//
// Every package-level identifier here starts with "oracle" (or "rel") so it
// cannot collide with the other test files of the package.

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// oracleEventKind is one listener event.
type oracleEventKind uint8

const (
	oracleSubmitted oracleEventKind = iota + 1
	oracleStarted
	oracleCompleted
	oracleRejected
)

func (k oracleEventKind) String() string {
	switch k {
	case oracleSubmitted:
		return "submitted"
	case oracleStarted:
		return "started"
	case oracleCompleted:
		return "completed"
	case oracleRejected:
		return "rejected"
	}
	return fmt.Sprintf("event(%d)", int(k))
}

// oracleMaxEvents bounds the events kept per task: a valid life has at most
// four, so a fifth is already a violation.
const oracleMaxEvents = 6

// oracleTaskLog is what the oracle knows of one task (by group key and ID).
type oracleTaskLog struct {
	events    [oracleMaxEvents]oracleEventKind
	n         uint8
	overflow  bool
	completed groupconc.TaskStatus // the status OnCompleted reported
	misnamed  bool                 // OnCompleted's result named another task
	fnCalls   int32                // how often the wrapped function was entered
	wrapped   bool                 // the function was wrapped by oracleTask
	late      bool                 // an event arrived after seal
}

func (l *oracleTaskLog) add(k oracleEventKind) {
	if int(l.n) == len(l.events) {
		l.overflow = true
		return
	}
	l.events[l.n] = k
	l.n++
}

func (l *oracleTaskLog) seq() []oracleEventKind { return l.events[:l.n] }

func (l *oracleTaskLog) String() string {
	parts := make([]string, 0, l.n)
	for _, k := range l.seq() {
		parts = append(parts, k.String())
	}
	if l.overflow {
		parts = append(parts, "…")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// oracleLifes are the complete lives a task may have, as
// TaskLifecycleListener documents them: cancelled before it ran; ran; rejected and never ran;
// rejected and then run without permits (caller-runs, Rejection.Run).
var oracleLifes = [][]oracleEventKind{
	{oracleSubmitted, oracleCompleted},
	{oracleSubmitted, oracleStarted, oracleCompleted},
	{oracleSubmitted, oracleRejected},
	{oracleSubmitted, oracleRejected, oracleStarted, oracleCompleted},
}

// oracleLifeOK reports whether seq is a complete life (final) or a prefix of
// one (not final).
func oracleLifeOK(seq []oracleEventKind, final bool) bool {
	for _, life := range oracleLifes {
		if final && slices.Equal(seq, life) {
			return true
		}
		if !final && len(seq) <= len(life) && slices.Equal(seq, life[:len(seq)]) {
			return true
		}
	}
	return false
}

// oracleShards spreads the recorder over several mutexes so the soak test's
// submitters do not all queue on one.
const oracleShards = 32

// oracleRecorder is a TaskLifecycleListener that keeps every task's events in
// order. It is safe for concurrent use.
type oracleRecorder struct {
	seed   maphash.Seed
	sealed atomic.Bool
	shards [oracleShards]struct {
		mu    sync.Mutex
		tasks map[string]*oracleTaskLog // guarded by mu
	}
}

func newOracleRecorder() *oracleRecorder {
	r := &oracleRecorder{seed: maphash.MakeSeed()}
	for i := range r.shards {
		r.shards[i].tasks = make(map[string]*oracleTaskLog)
	}
	return r
}

func oracleKey(groupKey, taskID string) string { return groupKey + "\x00" + taskID }

func oracleSplit(k string) (groupKey, taskID string) {
	groupKey, taskID, _ = strings.Cut(k, "\x00")
	return groupKey, taskID
}

// with calls f with the log of (groupKey, taskID), created if need be, under
// its shard's lock.
func (r *oracleRecorder) with(groupKey, taskID string, f func(l *oracleTaskLog)) {
	k := oracleKey(groupKey, taskID)
	s := &r.shards[maphash.String(r.seed, k)%oracleShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.tasks[k]
	if l == nil {
		l = new(oracleTaskLog)
		s.tasks[k] = l
	}
	f(l)
}

// lookup returns a copy of the log of (groupKey, taskID).
func (r *oracleRecorder) lookup(groupKey, taskID string) (oracleTaskLog, bool) {
	k := oracleKey(groupKey, taskID)
	s := &r.shards[maphash.String(r.seed, k)%oracleShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.tasks[k]
	if !ok {
		return oracleTaskLog{}, false
	}
	return *l, true
}

// each calls f for every log, shard by shard, with the shard locked.
func (r *oracleRecorder) each(f func(key string, l *oracleTaskLog)) {
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		for k, l := range s.tasks {
			f(k, l)
		}
		s.mu.Unlock()
	}
}

func (r *oracleRecorder) event(groupKey, taskID string, k oracleEventKind, res *groupconc.GroupResult[any]) {
	late := r.sealed.Load()
	r.with(groupKey, taskID, func(l *oracleTaskLog) {
		l.add(k)
		if res != nil {
			l.completed = res.Status
			l.misnamed = res.GroupKey != groupKey || res.TaskID != taskID
		}
		if late {
			l.late = true
		}
	})
}

func (r *oracleRecorder) OnSubmitted(groupKey, taskID string) {
	r.event(groupKey, taskID, oracleSubmitted, nil)
}

func (r *oracleRecorder) OnStarted(groupKey, taskID string) {
	r.event(groupKey, taskID, oracleStarted, nil)
}

func (r *oracleRecorder) OnCompleted(groupKey, taskID string, res groupconc.GroupResult[any]) {
	r.event(groupKey, taskID, oracleCompleted, &res)
}

func (r *oracleRecorder) OnRejected(groupKey, taskID, _ string) {
	r.event(groupKey, taskID, oracleRejected, nil)
}

// rejected reports whether the task has been rejected: a function that runs
// after that runs without permits, outside every limit.
func (r *oracleRecorder) rejected(groupKey, taskID string) bool {
	l, _ := r.lookup(groupKey, taskID)
	return slices.Contains(l.seq(), oracleRejected)
}

// oracleTee is a listener that tells each of its listeners in turn.
type oracleTee []groupconc.TaskLifecycleListener

func (t oracleTee) OnSubmitted(g, id string) {
	for _, l := range t {
		l.OnSubmitted(g, id)
	}
}

func (t oracleTee) OnStarted(g, id string) {
	for _, l := range t {
		l.OnStarted(g, id)
	}
}

func (t oracleTee) OnCompleted(g, id string, r groupconc.GroupResult[any]) {
	for _, l := range t {
		l.OnCompleted(g, id, r)
	}
}

func (t oracleTee) OnRejected(g, id, reason string) {
	for _, l := range t {
		l.OnRejected(g, id, reason)
	}
}

// oracleGauge tracks a current value and its maximum.
type oracleGauge struct{ cur, max atomic.Int64 }

func (g *oracleGauge) inc() {
	n := g.cur.Add(1)
	for m := g.max.Load(); n > m && !g.max.CompareAndSwap(m, n); m = g.max.Load() {
	}
}

func (g *oracleGauge) dec() { g.cur.Add(-1) }

// oracleGauges are the independent counters of running functions: one for
// all groups, one per gauge key (a group key, or a key plus an eviction
// generation), and one for functions run without permits after a rejection.
type oracleGauges struct {
	global  oracleGauge
	outside oracleGauge
	groups  sync.Map // gauge key -> *oracleGauge
}

func (g *oracleGauges) group(key string) *oracleGauge {
	if gg, ok := g.groups.Load(key); ok {
		return gg.(*oracleGauge)
	}
	gg, _ := g.groups.LoadOrStore(key, new(oracleGauge))
	return gg.(*oracleGauge)
}

// oracleTracked is one accepted Submit, seen through its handle.
type oracleTracked struct {
	groupKey, taskID string
	done             <-chan struct{}
	result           func() groupconc.GroupResult[any] // only once done is closed
	await            func(ctx context.Context) (groupconc.GroupResult[any], error)
	first            groupconc.TaskStatus // first status observed, 0 before
	firstErr         error
}

// oracle is the invariant oracle of one executor. Submit through
// oracleSubmit (or wrap with oracleTask and track with oracleTrack) and set
// o.rec (or a tee containing it) as the policy's listener.
type oracle struct {
	rec    *oracleRecorder
	gauges oracleGauges

	// handler is set by tests whose policy has a RejectionHandler: a task
	// rejected and never run may then end SUCCESS or FAILED too.
	handler bool

	// live, if set, holds the limits in force over time of an executor
	// whose policy changes (UpdatePolicy): checkLimits and checkStill then
	// check against it instead of one policy. Set it before the first
	// Submit.
	live *oracleLive

	// accepted counts accepted Submits, tracked or not; finals counts the
	// final statuses of untracked ones, told through final (the soak test
	// checks its handles itself instead of keeping a million of them).
	accepted atomic.Int64
	finals   [5]atomic.Uint64

	mu      sync.Mutex
	tracked []*oracleTracked // guarded by mu
	refused []string         // guarded by mu: keys of Submits that returned an error
	panics  []string         // guarded by mu: panics caught by guard
}

func newOracle() *oracle { return &oracle{rec: newOracleRecorder()} }

// seal marks the point after which no event may arrive (after Shutdown has
// returned nil: every task is over).
func (o *oracle) seal() { o.rec.sealed.Store(true) }

// oracleTask wraps fn so that it raises the gauges while it runs: the global
// and gaugeKey's gauges when it runs with permits, the outside gauge when it
// runs after a rejection (caller-runs or Rejection.Run).
func oracleTask[T any](o *oracle, gaugeKey, groupKey, taskID string, fn groupconc.Task[T]) groupconc.Task[T] {
	o.rec.with(groupKey, taskID, func(l *oracleTaskLog) { l.wrapped = true })
	return func(ctx context.Context) (T, error) {
		o.rec.with(groupKey, taskID, func(l *oracleTaskLog) { l.fnCalls++ })
		if o.rec.rejected(groupKey, taskID) {
			o.gauges.outside.inc()
			defer o.gauges.outside.dec()
		} else {
			g := o.gauges.group(gaugeKey)
			o.gauges.global.inc()
			g.inc()
			defer func() {
				g.dec()
				o.gauges.global.dec()
			}()
			if o.live != nil {
				defer o.live.enter(gaugeKey)()
			}
		}
		return fn(ctx)
	}
}

// oracleTrack records an accepted Submit's handle.
func oracleTrack[T any](o *oracle, h *groupconc.TaskHandle[T]) *oracleTracked {
	tr := &oracleTracked{
		groupKey: h.GroupKey(),
		taskID:   h.TaskID(),
		done:     h.Done(),
		result:   func() groupconc.GroupResult[any] { return oracleAny(h.Wait()) },
		await: func(ctx context.Context) (groupconc.GroupResult[any], error) {
			r, err := h.Await(ctx)
			return oracleAny(r), err
		},
	}
	o.accepted.Add(1)
	o.mu.Lock()
	o.tracked = append(o.tracked, tr)
	o.mu.Unlock()
	return tr
}

// final records the final status of an accepted Submit whose handle is not
// tracked.
func (o *oracle) final(s groupconc.TaskStatus) {
	o.accepted.Add(1)
	if s >= groupconc.StatusSuccess && s <= groupconc.StatusRejected {
		o.finals[s].Add(1)
	} else {
		o.finals[0].Add(1)
	}
}

// oracleSubmit submits fn, wrapped by oracleTask with the group key as gauge
// key, and tracks the handle (or records the refusal).
func oracleSubmit[T any](o *oracle, ctx context.Context, e *groupconc.GroupExecutor, groupKey, taskID string, fn groupconc.Task[T]) (*groupconc.TaskHandle[T], error) {
	return oracleSubmitAs(o, groupKey, ctx, e, groupKey, taskID, fn)
}

// oracleSubmitAs is oracleSubmit with an explicit gauge key.
func oracleSubmitAs[T any](o *oracle, gaugeKey string, ctx context.Context, e *groupconc.GroupExecutor, groupKey, taskID string, fn groupconc.Task[T]) (*groupconc.TaskHandle[T], error) {
	return oracleSubmitWith(o, gaugeKey, ctx, e, groupKey, taskID, fn, groupconc.SubmitOptions{})
}

// oracleSubmitWith is oracleSubmitAs through SubmitWith.
func oracleSubmitWith[T any](o *oracle, gaugeKey string, ctx context.Context, e *groupconc.GroupExecutor, groupKey, taskID string, fn groupconc.Task[T], opts groupconc.SubmitOptions) (*groupconc.TaskHandle[T], error) {
	h, err := groupconc.SubmitWith(ctx, e, groupKey, taskID, oracleTask(o, gaugeKey, groupKey, taskID, fn), opts)
	if err != nil {
		o.mu.Lock()
		o.refused = append(o.refused, oracleKey(groupKey, taskID))
		o.mu.Unlock()
		return nil, err
	}
	oracleTrack(o, h)
	return h, nil
}

func oracleAny[T any](r groupconc.GroupResult[T]) groupconc.GroupResult[any] {
	return groupconc.GroupResult[any]{
		GroupKey: r.GroupKey, TaskID: r.TaskID, Status: r.Status, Value: r.Value, Err: r.Err,
		Submitted: r.Submitted, Start: r.Start, End: r.End,
	}
}

func (o *oracle) snapshot() []*oracleTracked {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.tracked)
}

// guard runs f and turns a panic out of it into a failure (I6): Submit,
// Shutdown and Close must never panic.
func (o *oracle) guard(t testing.TB, name string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("%s panicked: %v\n%s", name, r, debug.Stack())
			o.mu.Lock()
			o.panics = append(o.panics, msg)
			o.mu.Unlock()
			t.Errorf("I6: %s", msg)
		}
	}()
	f()
}

// oracleLimits are the caps checked by checkLimits; a cap of Unlimited (or a
// nil group function) is not checked.
type oracleLimits struct {
	global int
	group  func(gaugeKey string) int // running cap: min(concurrency, bulkhead)
}

// oracleLimitsOf returns p's caps; a gauge key "k#n" is checked against
// group k's limits.
func oracleLimitsOf(p *groupconc.GroupPolicy) oracleLimits {
	return oracleLimits{
		global: p.GlobalMaxInFlight(),
		group: func(gaugeKey string) int {
			k, _, _ := strings.Cut(gaugeKey, "#")
			return min(p.ResolveConcurrency(k), p.ResolveMaxInFlight(k))
		},
	}
}

// checkLimits checks I1 on the gauges: no cap was ever exceeded.
//
// With o.live set, lim is ignored: the limits in force when each function
// started decide (see oracleLive).
func (o *oracle) checkLimits(t testing.TB, lim oracleLimits) bool {
	t.Helper()
	if o.live != nil {
		return o.live.check(t)
	}
	ok := true
	if m := o.gauges.global.max.Load(); lim.global != groupconc.Unlimited && m > int64(lim.global) {
		t.Errorf("I1: %d functions ran at once over all groups, want <= %d", m, lim.global)
		ok = false
	}
	if lim.group == nil {
		return ok
	}
	o.gauges.groups.Range(func(k, g any) bool {
		if c, m := lim.group(k.(string)), g.(*oracleGauge).max.Load(); c != groupconc.Unlimited && m > int64(c) {
			t.Errorf("I1: %d functions of %q ran at once, want <= %d", m, k, c)
			ok = false
		}
		return true
	})
	return ok
}

// globalMax and groupMax report the gauges' maxima.
func (o *oracle) globalMax() int64 { return o.gauges.global.max.Load() }

func (o *oracle) groupMax(gaugeKey string) int64 { return o.gauges.group(gaugeKey).max.Load() }

// checkStill checks I1 on a snapshot of the executor, which must be still
// (inside a bubble after synctest.Wait): the counts of running, in-flight and
// waiting tasks of each group in keys never exceed the limits and the queue
// thresholds of p. Under IsolationOff a waiting task holds a global queue
// slot or one of its group's, so a group's waiting tasks are at most its
// threshold plus the global one; under IsolationFairShare the group's
// threshold counts its tasks waiting at every layer.
//
// With o.live set (p is then the policy in force), a lowered limit may be
// exceeded while it drains: a group's running tasks are bounded by the
// limits in force since its oldest running task started, its in-flight and
// the global in-flight tasks by the larger of the limit and the running
// tasks (those holding a permit but waiting further in go back to its
// line), and its waiting tasks by the largest threshold in force since it
// was last seen with none waiting (a lowered threshold rejects no waiting
// task).
func (o *oracle) checkStill(t testing.TB, e *groupconc.GroupExecutor, p *groupconc.GroupPolicy, keys []string) bool {
	t.Helper()
	ok := true
	s := e.Stats()
	live := o.live
	globalCap := p.GlobalMaxInFlight()
	if live != nil {
		globalCap = max(globalCap, live.allowed(oracleGlobalScope))
	}
	if globalCap != groupconc.Unlimited && s.GlobalInFlight > globalCap {
		t.Errorf("I1: Stats().GlobalInFlight = %d, want <= %d", s.GlobalInFlight, globalCap)
		ok = false
	}
	fair := p.Isolation() == groupconc.IsolationFairShare
	gq := p.GlobalQueueThreshold()
	if live != nil {
		gq = live.waitBound(oracleGlobalScope, s.Waiting, func(p *groupconc.GroupPolicy) int { return p.GlobalQueueThreshold() })
	}
	sumQ, unbounded := gq, gq == groupconc.Unlimited
	for _, k := range keys {
		gs, found := e.GroupStats(k)
		if !found {
			continue
		}
		runCap, inFlightCap := min(gs.MaxConcurrency, gs.MaxInFlight), gs.MaxInFlight
		q := gs.QueueThreshold
		if live != nil {
			runCap = max(runCap, live.allowed(live.scopeOf(k)))
			inFlightCap = max(inFlightCap, gs.Running)
			q = live.waitBound(k, gs.Waiting, func(p *groupconc.GroupPolicy) int { return p.ResolveQueueThreshold(k) })
		}
		if runCap != groupconc.Unlimited && gs.Running > runCap {
			t.Errorf("I1: group %q Running = %d, want <= %d (MaxConcurrency %d, MaxInFlight %d)", k, gs.Running, runCap, gs.MaxConcurrency, gs.MaxInFlight)
			ok = false
		}
		if inFlightCap != groupconc.Unlimited && gs.InFlight > inFlightCap {
			t.Errorf("I1: group %q InFlight = %d, want <= %d", k, gs.InFlight, inFlightCap)
			ok = false
		}
		if fair && q != groupconc.Unlimited && gs.Waiting > q {
			t.Errorf("I1: group %q Waiting = %d, want <= %d (its threshold, every layer)", k, gs.Waiting, q)
			ok = false
		}
		if q == groupconc.Unlimited || gq == groupconc.Unlimited {
			unbounded = true
			continue
		}
		sumQ += q
		if gs.Waiting > q+gq {
			t.Errorf("I1: group %q Waiting = %d, want <= %d (group) + %d (global)", k, gs.Waiting, q, gq)
			ok = false
		}
	}
	if !unbounded && s.Waiting > sumQ {
		t.Errorf("I1: Stats().Waiting = %d, want <= %d (sum of thresholds)", s.Waiting, sumQ)
		ok = false
	}
	return ok
}

// oracleGlobalScope is the scope of oracleLive's global limit; every other
// scope is a gauge key.
const oracleGlobalScope = "\x00global"

// oracleLive holds the policies an executor had over time, one epoch each,
// and checks every function's start against them (I1 under UpdatePolicy): a
// function may start while its scope's running count, itself included, is
// at most the largest limit in force since the oldest function running in
// that scope started. When the limit has not changed since then, that is
// the limit itself, as strict as without UpdatePolicy. It is safe for
// concurrent use.
type oracleLive struct {
	// scopeOf maps a group key to the gauge key of its current state (a
	// key plus an eviction generation); nil means the key itself.
	scopeOf func(groupKey string) string

	mu        sync.Mutex
	policies  []*groupconc.GroupPolicy // guarded by mu: policies[i] in force from epoch i
	running   map[string]map[int]int   // guarded by mu: scope -> start epoch -> functions
	count     map[string]int           // guarded by mu: scope -> functions running
	waitSince map[string]int           // guarded by mu: scope -> epoch it was last seen with none waiting
	errs      []string                 // guarded by mu
}

func newOracleLive(p *groupconc.GroupPolicy) *oracleLive {
	return &oracleLive{
		scopeOf:   func(k string) string { return k },
		policies:  []*groupconc.GroupPolicy{p},
		running:   make(map[string]map[int]int),
		count:     make(map[string]int),
		waitSince: make(map[string]int),
	}
}

// update starts a new epoch with p in force. Call it just before
// UpdatePolicy(p), and again with the old policy if that fails.
func (l *oracleLive) update(p *groupconc.GroupPolicy) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.policies = append(l.policies, p)
}

// limitOf is the running cap of scope under p.
func oracleLiveLimit(p *groupconc.GroupPolicy, scope string) int {
	if scope == oracleGlobalScope {
		return p.GlobalMaxInFlight()
	}
	k, _, _ := strings.Cut(scope, "#")
	return min(p.ResolveConcurrency(k), p.ResolveMaxInFlight(k))
}

// maxSinceLocked returns the largest value f gives for the policies in force
// from epoch since on.
func (l *oracleLive) maxSinceLocked(since int, f func(p *groupconc.GroupPolicy) int) int {
	m := 0
	for _, p := range l.policies[since:] {
		m = max(m, f(p))
	}
	return m
}

// allowedLocked returns the most functions scope may run now.
func (l *oracleLive) allowedLocked(scope string) int {
	since := len(l.policies) - 1
	for ep := range l.running[scope] {
		since = min(since, ep)
	}
	return l.maxSinceLocked(since, func(p *groupconc.GroupPolicy) int { return oracleLiveLimit(p, scope) })
}

// allowed returns the most functions scope may run now.
func (l *oracleLive) allowed(scope string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowedLocked(scope)
}

// enter records a function of gaugeKey starting, checks the global and the
// group limits, and returns the function that records its end.
func (l *oracleLive) enter(gaugeKey string) (exit func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	epoch := len(l.policies) - 1
	scopes := [2]string{oracleGlobalScope, gaugeKey}
	for _, sc := range scopes {
		if l.running[sc] == nil {
			l.running[sc] = make(map[int]int)
		}
		l.running[sc][epoch]++
		l.count[sc]++
		if c, a := l.count[sc], l.allowedLocked(sc); a != groupconc.Unlimited && c > a && len(l.errs) < 20 {
			l.errs = append(l.errs, fmt.Sprintf("%d functions of %q ran at once in epoch %d, want <= %d (the limits in force since the oldest of them started)", c, sc, epoch, a))
		}
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, sc := range scopes {
			l.count[sc]--
			if l.running[sc][epoch]--; l.running[sc][epoch] == 0 {
				delete(l.running[sc], epoch)
			}
		}
	}
}

// waitBound returns the most tasks scope (a group key, or
// oracleGlobalScope) may have waiting, given that it has waiting now: the
// largest threshold f gives since it was last seen with none.
func (l *oracleLive) waitBound(scope string, waiting int, f func(p *groupconc.GroupPolicy) int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if waiting == 0 {
		l.waitSince[scope] = len(l.policies) - 1
	}
	return l.maxSinceLocked(l.waitSince[scope], f)
}

// check reports the starts that exceeded the limits.
func (l *oracleLive) check(t testing.TB) bool {
	t.Helper()
	l.mu.Lock()
	errs := slices.Clone(l.errs)
	l.mu.Unlock()
	for _, e := range errs {
		t.Errorf("I1: %s", e)
	}
	return len(errs) == 0
}

// checkQuiescent checks I2 once every task is over: every permit is back
// and nothing counts as running, waiting or in flight.
func (o *oracle) checkQuiescent(t testing.TB, e *groupconc.GroupExecutor) bool {
	t.Helper()
	ok := true
	if err := e.Quiescent(); err != nil {
		t.Errorf("I2: permits leaked: %v", err)
		ok = false
	}
	if s := e.Stats(); s.Running != 0 || s.Waiting != 0 || s.GlobalInFlight != 0 {
		t.Errorf("I2: after quiescence Stats() Running=%d Waiting=%d GlobalInFlight=%d, want all 0", s.Running, s.Waiting, s.GlobalInFlight)
		ok = false
	}
	if c := o.gauges.global.cur.Load(); c != 0 {
		t.Errorf("I2: %d functions still running, want 0", c)
		ok = false
	}
	return ok
}

// observe records the first status seen of every completed handle and
// reports a handle whose status changed since (I3: never overwritten). It is
// cheap enough to call after every step.
func (o *oracle) observe(t testing.TB) bool {
	t.Helper()
	ok := true
	for _, tr := range o.snapshot() {
		select {
		case <-tr.done:
		default:
			continue
		}
		r := tr.result()
		if tr.first == 0 {
			tr.first, tr.firstErr = r.Status, r.Err
			continue
		}
		if r.Status != tr.first || r.Err != tr.firstErr {
			t.Errorf("I3: task %s/%s result changed from %v (%v) to %v (%v)", tr.groupKey, tr.taskID, tr.first, tr.firstErr, r.Status, r.Err)
			ok = false
		}
	}
	return ok
}

// checkResults checks I3 once every task is over: every tracked handle is
// complete with a valid status that never changed, and the executor's
// outcome counters count each accepted Submit once, by that status.
func (o *oracle) checkResults(t testing.TB, e *groupconc.GroupExecutor) bool {
	t.Helper()
	ok := o.observe(t)
	var by [5]uint64
	for i := range by {
		by[i] = o.finals[i].Load()
	}
	if by[0] != 0 {
		t.Errorf("I3: %d tasks ended with an invalid status", by[0])
		ok = false
	}
	tracked := o.snapshot()
	for _, tr := range tracked {
		select {
		case <-tr.done:
		default:
			t.Errorf("I3: task %s/%s has no result after quiescence", tr.groupKey, tr.taskID)
			ok = false
			continue
		}
		r := tr.result()
		if r.Status < groupconc.StatusSuccess || r.Status > groupconc.StatusRejected {
			t.Errorf("I3: task %s/%s ended with status %v", tr.groupKey, tr.taskID, r.Status)
			ok = false
			continue
		}
		by[r.Status]++
		if r.GroupKey != tr.groupKey || r.TaskID != tr.taskID {
			t.Errorf("I3: task %s/%s result names %s/%s", tr.groupKey, tr.taskID, r.GroupKey, r.TaskID)
			ok = false
		}
		if (r.Status == groupconc.StatusSuccess) != (r.Err == nil) {
			t.Errorf("I3: task %s/%s ended %v with Err %v", tr.groupKey, tr.taskID, r.Status, r.Err)
			ok = false
		}
		if r.Status == groupconc.StatusRejected && !errors.As(r.Err, new(*groupconc.RejectedError)) {
			t.Errorf("I3: task %s/%s REJECTED with Err %v, want a *RejectedError", tr.groupKey, tr.taskID, r.Err)
			ok = false
		}
	}
	s := e.Stats()
	if s.Submitted != uint64(o.accepted.Load()) {
		t.Errorf("I3: Stats().Submitted = %d, want %d accepted Submits", s.Submitted, o.accepted.Load())
		ok = false
	}
	got := [5]uint64{0, s.Succeeded, s.Failed, s.Cancelled, s.Rejected}
	if got != by {
		t.Errorf("I3: Stats() outcomes (succeeded, failed, cancelled, rejected) = %v, want %v from the handles", got[1:], by[1:])
		ok = false
	}
	if s.Succeeded+s.Failed+s.Cancelled+s.Rejected != s.Submitted {
		t.Errorf("I3: Stats() outcomes add up to %d, want Submitted %d", s.Succeeded+s.Failed+s.Cancelled+s.Rejected, s.Submitted)
		ok = false
	}
	return ok
}

// awaitAll calls Await(ctx) on every tracked handle and reports a handle
// whose Await returned only because ctx ended (I3, I7).
func (o *oracle) awaitAll(t testing.TB, ctx context.Context) bool {
	t.Helper()
	ok := true
	for _, tr := range o.snapshot() {
		r, err := tr.await(ctx)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			select {
			case <-tr.done:
			default:
				t.Errorf("I7: Await of task %s/%s returned only because its context ended: %v %v", tr.groupKey, tr.taskID, r.Status, err)
				ok = false
			}
		}
	}
	return ok
}

// checkEvents checks I4 once every task is over: each accepted task has a
// complete life of events in a valid order, heard once each; its function
// ran exactly when OnStarted was heard; OnCompleted carried its handle's
// result; nothing was heard of refused Submits nor after seal; and the
// totals balance: submitted = completed + rejected-and-never-run, started =
// completed - cancelled-before-start.
func (o *oracle) checkEvents(t testing.TB) bool {
	t.Helper()
	return o.checkEventsFinal(t, true)
}

// checkEventsSoFar checks that every task's events so far are a prefix of a
// valid life; it may be called at any time.
func (o *oracle) checkEventsSoFar(t testing.TB) bool {
	t.Helper()
	return o.checkEventsFinal(t, false)
}

func (o *oracle) checkEventsFinal(t testing.TB, final bool) bool {
	t.Helper()
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		ok = false
		t.Errorf("I4: "+format, args...)
	}
	tracked := o.snapshot()
	o.mu.Lock()
	handler, refused := o.handler, slices.Clone(o.refused)
	o.mu.Unlock()
	want := make(map[string]*oracleTracked, len(tracked))
	for _, tr := range tracked {
		want[oracleKey(tr.groupKey, tr.taskID)] = tr
	}
	for _, k := range refused {
		if l, found := o.rec.lookup(oracleSplit(k)); found && l.n > 0 {
			fail("refused Submit %q heard %v", k, &l)
		}
	}
	var submitted, started, completed, rejectedNeverRun, cancelledBeforeStart int
	var msgs []string // collected under the shard locks, reported after
	o.rec.each(func(k string, l *oracleTaskLog) {
		g, id := oracleSplit(k)
		name := g + "/" + id
		seq := l.seq()
		if l.n == 0 && want[k] == nil {
			return // wrapped for a Submit that was refused
		}
		if l.overflow || !oracleLifeOK(seq, final) {
			msgs = append(msgs, fmt.Sprintf("task %s heard %v, not a valid life (final=%v)", name, l, final))
		}
		if l.late {
			msgs = append(msgs, fmt.Sprintf("task %s heard an event after Shutdown returned: %v", name, l))
		}
		runs := slices.Contains(seq, oracleStarted)
		if l.n > 0 && seq[0] == oracleSubmitted && want[k] == nil && len(tracked) > 0 {
			msgs = append(msgs, fmt.Sprintf("task %s heard %v but no Submit accepted it", name, l))
		}
		if final && l.wrapped && (l.fnCalls > 1 || (l.fnCalls == 1) != runs) {
			msgs = append(msgs, fmt.Sprintf("task %s: function entered %d times, events %v", name, l.fnCalls, l))
		}
		for _, ev := range seq {
			switch ev {
			case oracleSubmitted:
				submitted++
			case oracleStarted:
				started++
			case oracleCompleted:
				completed++
			}
		}
		if slices.Equal(seq, oracleLifes[2]) {
			rejectedNeverRun++
		}
		if slices.Equal(seq, oracleLifes[0]) {
			cancelledBeforeStart++
			if l.completed != groupconc.StatusCancelled {
				msgs = append(msgs, fmt.Sprintf("task %s completed without starting as %v, want CANCELLED", name, l.completed))
			}
		}
		if l.misnamed {
			msgs = append(msgs, fmt.Sprintf("task %s: OnCompleted's result names another task", name))
		}
		tr := want[k]
		if !final || tr == nil {
			return
		}
		select {
		case <-tr.done:
		default:
			return // checkResults reports it
		}
		r := tr.result()
		if slices.Contains(seq, oracleCompleted) && l.completed != r.Status {
			msgs = append(msgs, fmt.Sprintf("task %s: OnCompleted said %v, the handle %v", name, l.completed, r.Status))
		}
		if slices.Equal(seq, oracleLifes[2]) && !handler && r.Status != groupconc.StatusRejected && r.Status != groupconc.StatusCancelled {
			msgs = append(msgs, fmt.Sprintf("task %s was rejected and never ran but ended %v", name, r.Status))
		}
	})
	for _, m := range msgs {
		fail("%s", m)
	}
	if final {
		for k := range want {
			if l, found := o.rec.lookup(oracleSplit(k)); !found || l.n == 0 {
				fail("accepted task %q heard no event", k)
			}
		}
		if submitted != completed+rejectedNeverRun {
			fail("submitted %d != completed %d + rejected-and-never-run %d", submitted, completed, rejectedNeverRun)
		}
		if started != completed-cancelledBeforeStart {
			fail("started %d != completed %d - cancelled-before-start %d", started, completed, cancelledBeforeStart)
		}
		if n := o.accepted.Load(); submitted != int(n) {
			fail("heard %d OnSubmitted, want %d accepted Submits", submitted, n)
		}
	}
	return ok
}

// checkNoPanics reports the panics guard caught (I6); guard already failed
// the test, this is for callers that want a boolean.
func (o *oracle) checkNoPanics(t testing.TB) bool {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.panics) == 0
}

// checkAll runs every end-of-life check: call it once every task is over
// (after Shutdown returned nil, or after Close and synctest.Wait).
func (o *oracle) checkAll(t testing.TB, e *groupconc.GroupExecutor, lim oracleLimits) bool {
	t.Helper()
	ok := o.checkLimits(t, lim)
	ok = o.checkQuiescent(t, e) && ok
	ok = o.checkResults(t, e) && ok
	ok = o.checkEvents(t) && ok
	return o.checkNoPanics(t) && ok
}

// oracleFakeTB records failures instead of failing: the oracle's self-tests
// feed it broken histories and expect the checks to complain.
type oracleFakeTB struct {
	testing.TB // nil: only Helper and Errorf are used by the checks
	errs       []string
}

func (f *oracleFakeTB) Helper() {}

func (f *oracleFakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// TestOracleFlagsBrokenHistories shows each check fails on the breakage it
// is for, and passes on a good history (RELIABILITY: an oracle that never
// fails proves nothing).
func TestOracleFlagsBrokenHistories(t *testing.T) {
	S, St, C, R := oracleSubmitted, oracleStarted, oracleCompleted, oracleRejected
	lives := []struct {
		name string
		seq  []oracleEventKind
		ok   bool
	}{
		{"ran", []oracleEventKind{S, St, C}, true},
		{"cancelled while waiting", []oracleEventKind{S, C}, true},
		{"rejected", []oracleEventKind{S, R}, true},
		{"caller-runs", []oracleEventKind{S, R, St, C}, true},
		{"lost completion", []oracleEventKind{S, St}, false},
		{"double completion", []oracleEventKind{S, St, C, C}, false},
		{"started twice", []oracleEventKind{S, St, St, C}, false},
		{"started before submitted", []oracleEventKind{St, S, C}, false},
		{"rejected after running", []oracleEventKind{S, St, C, R}, false},
		{"never submitted", []oracleEventKind{St, C}, false},
		{"nothing", nil, false},
	}
	for _, l := range lives {
		o := newOracle()
		for _, k := range l.seq {
			status := groupconc.TaskStatus(0)
			if k == C {
				status = groupconc.StatusCancelled
				if slices.Contains(l.seq, St) {
					status = groupconc.StatusSuccess
				}
			}
			o.rec.event("g", "1", k, &groupconc.GroupResult[any]{GroupKey: "g", TaskID: "1", Status: status})
		}
		o.accepted.Store(1)
		o.finals[groupconc.StatusSuccess].Store(1)
		f := &oracleFakeTB{}
		got := o.checkEvents(f)
		assert.Equal(t, l.ok, got, "%s: %v", l.name, f.errs)
	}

	// Events after seal (after Shutdown returned).
	o := newOracle()
	o.rec.OnSubmitted("g", "1")
	o.seal()
	o.rec.OnCompleted("g", "1", groupconc.GroupResult[any]{GroupKey: "g", TaskID: "1", Status: groupconc.StatusCancelled})
	o.accepted.Store(1)
	f := &oracleFakeTB{}
	assert.False(t, o.checkEvents(f), "an event after seal must be flagged")

	// OnCompleted naming another task.
	o = newOracle()
	o.rec.OnSubmitted("g", "1")
	o.rec.OnCompleted("g", "1", groupconc.GroupResult[any]{GroupKey: "g", TaskID: "2", Status: groupconc.StatusCancelled})
	o.accepted.Store(1)
	f = &oracleFakeTB{}
	assert.False(t, o.checkEvents(f))

	// I1: a gauge over its cap.
	o = newOracle()
	g := o.gauges.group("a")
	g.inc()
	g.inc()
	g.dec()
	g.dec()
	f = &oracleFakeTB{}
	assert.False(t, o.checkLimits(f, oracleLimits{global: groupconc.Unlimited, group: func(string) int { return 1 }}))
	assert.True(t, o.checkLimits(f, oracleLimits{global: groupconc.Unlimited, group: func(string) int { return 2 }}))
	o.gauges.global.inc()
	o.gauges.global.inc()
	assert.False(t, o.checkLimits(f, oracleLimits{global: 1}))
}

// TestOracleFlagsBrokenResults shows the I3 checks fail on a handle without
// a result, on outcome counters that disagree, and on a function entered
// without an OnStarted.
func TestOracleFlagsBrokenResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOracle()
		p, err := groupconc.NewPolicyBuilder().TaskLifecycleListener(o.rec).Build()
		require.NoError(t, err)
		e := groupconc.New(p)
		h, err := oracleSubmit(o, t.Context(), e, "a", "1", func(context.Context) (int, error) { return 1, nil })
		require.NoError(t, err)
		h.Wait()
		require.NoError(t, e.Shutdown(t.Context()))
		o.seal()
		require.True(t, o.checkAll(t, e, oracleLimitsOf(p)), "a good history passes")

		// A handle that never completes.
		never := make(chan struct{})
		o.mu.Lock()
		o.tracked = append(o.tracked, &oracleTracked{groupKey: "a", taskID: "ghost", done: never})
		o.mu.Unlock()
		o.accepted.Add(1)
		f := &oracleFakeTB{}
		assert.False(t, o.checkResults(f, e), "a handle without a result must be flagged")
		assert.False(t, o.checkEvents(f), "a task with no event must be flagged")

		// The function was entered without OnStarted.
		o2 := newOracle()
		fn := oracleTask(o2, "a", "a", "x", func(context.Context) (int, error) { return 0, nil })
		o2.rec.OnSubmitted("a", "x")
		_, _ = fn(t.Context())
		o2.rec.OnCompleted("a", "x", groupconc.GroupResult[any]{GroupKey: "a", TaskID: "x", Status: groupconc.StatusCancelled})
		o2.accepted.Store(1)
		f = &oracleFakeTB{}
		assert.False(t, o2.checkEvents(f), "fn entered but never heard starting must be flagged: %v", f.errs)
	})
}

// TestOracleLiveAllowsOnlyTheDrainOfALoweredLimit shows the live-limits
// check lets the functions started under a higher limit run on after it is
// lowered, flags a start above the lowered limit once they have ended, and
// is as strict as a fixed limit while the limit does not change.
func TestOracleLiveAllowsOnlyTheDrainOfALoweredLimit(t *testing.T) {
	policy := func(conc, global int) *groupconc.GroupPolicy {
		return mustBuild(t, builder().DefaultMaxConcurrencyPerGroup(conc).GlobalMaxInFlight(global))
	}
	start := func(l *oracleLive, n int) []func() {
		exits := make([]func(), n)
		for i := range exits {
			exits[i] = l.enter("a")
		}
		return exits
	}

	l := newOracleLive(policy(2, groupconc.Unlimited))
	start(l, 3)
	f := &oracleFakeTB{}
	assert.False(t, l.check(f), "3 running under concurrency 2 must be flagged")

	l = newOracleLive(policy(3, groupconc.Unlimited))
	exits := start(l, 3)
	l.update(policy(1, groupconc.Unlimited))
	exits[0]()
	exits = append(exits[1:], l.enter("a")) // 3 again, the first of the 3 still running
	f = &oracleFakeTB{}
	assert.True(t, l.check(f), "while the lowered limit drains, the old one holds: %v", f.errs)
	for _, exit := range exits {
		exit()
	}
	start(l, 2)
	f = &oracleFakeTB{}
	assert.False(t, l.check(f), "2 running under concurrency 1, with nothing left from before it was lowered, must be flagged")
	assert.Equal(t, 1, l.allowed("a"))

	l = newOracleLive(policy(groupconc.Unlimited, 2))
	start(l, 2)
	l.update(policy(groupconc.Unlimited, 1))
	assert.Equal(t, 2, l.allowed(oracleGlobalScope))
	l.enter("b")
	f = &oracleFakeTB{}
	assert.False(t, l.check(f), "3 running over all groups under a global cap lowered from 2 must be flagged")

	queue := func(q int) *groupconc.GroupPolicy { return mustBuild(t, builder().DefaultQueueThresholdPerGroup(q)) }
	threshold := func(p *groupconc.GroupPolicy) int { return p.ResolveQueueThreshold("a") }
	l = newOracleLive(queue(3))
	l.update(queue(1))
	assert.Equal(t, 3, l.waitBound("a", 3, threshold), "tasks waiting when the threshold was lowered may stay")
	assert.Equal(t, 1, l.waitBound("a", 0, threshold))
	assert.Equal(t, 1, l.waitBound("a", 2, threshold), "once none waited, the lowered threshold holds")
}
