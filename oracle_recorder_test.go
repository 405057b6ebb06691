package groupconc_test

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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
// TaskLifecycleListener documents them: cancelled before it ran; ran;
// rejected and never ran; rejected and then run without permits
// (caller-runs, Rejection.Run).
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

	// doAccepted, if set, hears first of each accepted task of a Do, on
	// the goroutine that called Do (see oracle.doAccepted).
	doAccepted func(groupKey, taskID string)
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
	if r.doAccepted != nil && strings.HasPrefix(taskID, "do-") {
		r.doAccepted(groupKey, taskID)
	}
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
