package otelgc

import (
	"context"
	"slices"

	"github.com/kobe/groupconc"
	"go.opentelemetry.io/otel/metric"
)

// listener records the histograms and the rejection counter. It keeps no
// per-task state. Everything it needs comes with OnCompleted's result.
type listener struct{ m *Metrics }

// OnSubmitted does nothing. The callback reads the submitted count.
func (listener) OnSubmitted(string, string) {}

// OnStarted does nothing. The result given to OnCompleted has the times.
func (listener) OnStarted(string, string) {}

// OnCompleted records a task's wait and run times. A task cancelled before
// it ran has Start == End at the moment it was cancelled, not when it ran:
// it is left out of both histograms rather than recorded as a run of zero
// seconds. One cancelled through its handle as it ran ends at the Cancel,
// when its handle completed, and its run is taken up to then.
func (l listener) OnCompleted(groupKey, _ string, r groupconc.GroupResult[any]) {
	if r.Status == groupconc.StatusCancelled && r.Start.Equal(r.End) {
		return
	}
	s, _ := l.m.labels.Series(groupKey)
	ctx := context.Background()
	l.m.wait.Record(ctx, r.QueueWait().Seconds(), s.record...)
	l.m.run.Record(ctx, r.Duration().Seconds(), s.record...)
}

// OnRejected counts a rejection by its reason: a queue threshold's, a
// Block wait past its MaxWait, or a task displaced under
// RejectDiscardOldest. Any other reason is counted as Other.
func (l listener) OnRejected(groupKey, _, reason string) {
	s, _ := l.m.labels.Series(groupKey)
	var opts []metric.AddOption
	if i := slices.Index(reasons[:], reason); i >= 0 {
		opts = s.rejected[i]
	} else {
		opts = l.m.rejectedOptions(Other, s.value)
	}
	l.m.rejected.Add(context.Background(), 1, opts...)
}
