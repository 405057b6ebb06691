package promgc

import (
	"slices"

	"github.com/kobe/groupconc"
)

// listener feeds the histograms and the rejection counter. It keeps no
// per-task state. Everything it needs comes with OnCompleted's result.
type listener struct{ m *Metrics }

// OnSubmitted does nothing. The collector reads the submitted count.
func (listener) OnSubmitted(string, string) {}

// OnStarted does nothing. The result given to OnCompleted has the times.
func (listener) OnStarted(string, string) {}

// OnCompleted observes a task's wait and run times. A task cancelled before
// it ran has Start == End at the moment it was cancelled, not when it ran:
// it is left out of both histograms rather than counted as a run of zero
// seconds. One cancelled through its handle as it ran ends at the Cancel,
// when its handle completed, and its run is taken up to then.
func (l listener) OnCompleted(groupKey, _ string, r groupconc.GroupResult[any]) {
	if r.Status == groupconc.StatusCancelled && r.Start.Equal(r.End) {
		return
	}
	s, _ := l.m.labels.Series(groupKey)
	s.durations.observe(r.QueueWait(), r.Duration())
}

// OnRejected counts a rejection by its reason: a queue threshold's, a
// Block wait past its MaxWait, or a task displaced under
// RejectDiscardOldest. Any other reason is counted as Other.
func (l listener) OnRejected(groupKey, _, reason string) {
	s, _ := l.m.labels.Series(groupKey)
	if i := slices.Index(reasons[:], reason); i >= 0 {
		s.rejected[i].Inc()
	} else {
		l.m.rejectedCounter(Other, s.labelValues).Inc()
	}
}
