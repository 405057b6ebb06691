package groupconc_test

import (
	"sync"

	"github.com/kobe/groupconc"
)

// recorder is a TaskLifecycleListener that keeps each task's events in
// order, with its OnCompleted result and OnRejected reason.
type recorder struct {
	mu      sync.Mutex
	events  map[string][]string                   // guarded by mu; by eventKey
	results map[string]groupconc.GroupResult[any] // guarded by mu
	reasons map[string]string                     // guarded by mu
}

func newRecorder() *recorder {
	return &recorder{
		events:  map[string][]string{},
		results: map[string]groupconc.GroupResult[any]{},
		reasons: map[string]string{},
	}
}

func eventKey(groupKey, taskID string) string { return groupKey + "/" + taskID }

func (r *recorder) add(groupKey, taskID, ev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := eventKey(groupKey, taskID)
	r.events[k] = append(r.events[k], ev)
}

func (r *recorder) OnSubmitted(groupKey, taskID string) { r.add(groupKey, taskID, evSubmitted) }

func (r *recorder) OnStarted(groupKey, taskID string) { r.add(groupKey, taskID, evStarted) }

func (r *recorder) OnCompleted(groupKey, taskID string, result groupconc.GroupResult[any]) {
	r.mu.Lock()
	r.results[eventKey(groupKey, taskID)] = result
	r.mu.Unlock()
	r.add(groupKey, taskID, evCompleted)
}

func (r *recorder) OnRejected(groupKey, taskID, reason string) {
	r.mu.Lock()
	r.reasons[eventKey(groupKey, taskID)] = reason
	r.mu.Unlock()
	r.add(groupKey, taskID, evRejected)
}

// Events returns a copy of the task's events so far.
func (r *recorder) Events(groupKey, taskID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events[eventKey(groupKey, taskID)]...)
}

// Result returns the result OnCompleted reported for the task.
func (r *recorder) Result(groupKey, taskID string) (groupconc.GroupResult[any], bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[eventKey(groupKey, taskID)]
	return res, ok
}

// Reason returns the reason OnRejected reported for the task.
func (r *recorder) Reason(groupKey, taskID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reasons[eventKey(groupKey, taskID)]
}

// Count returns how many events of kind ev were recorded, over all tasks.
func (r *recorder) Count(ev string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, evs := range r.events {
		for _, e := range evs {
			if e == ev {
				n++
			}
		}
	}
	return n
}

// Listener events as recorder names them.
const (
	evSubmitted = "submitted"
	evRejected  = "rejected"
	evStarted   = "started"
	evCompleted = "completed"
)

var _ groupconc.TaskLifecycleListener = (*recorder)(nil)
