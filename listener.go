package groupconc

// TaskLifecycleListener is told of every task's events. Its methods are
// called synchronously, with no lock of the executor held. They run on the
// goroutine of the Submit call, or on one of the executor's goroutines
// handling the task (running it, or ending it after a cancellation). They
// may call back into the executor, but a slow method delays that task.
// A slow OnCompleted also delays the tasks its task's permits went to, of
// any group. They are handed the permits at once, and go on from there on
// that goroutine once it returns. So an OnCompleted that waits for permits
// (Do, a blocking submit, a handle) may deadlock. An OnSubmitted that waits
// so makes Submit wait, and a Submit called from a task may then wait for
// that task's own permits. A panic in a method is recovered and ignored.
//
// For each task the events come in this order.
//   - OnSubmitted comes when Submit accepts it.
//   - OnRejected comes if a queue threshold turns it away.
//   - OnStarted comes just before its function runs. That is after all
//     permits, or without permits under RejectCallerRuns or Rejection.Run.
//   - OnCompleted comes after every run, and for a task cancelled while
//     waiting for permits.
//
// So after quiescence the count of OnSubmitted equals that of OnCompleted
// plus the rejected tasks that never ran. Events may still arrive after
// Close returns, from tasks that were cancelled but had not yet returned.
//
// OnCompleted returns before the task's handle completes, after its permits
// are given back. So a caller that waited for a task finds its OnCompleted
// over. The method must therefore not wait for that handle itself. For the
// same reason a method must not wait in Shutdown. Shutdown waits for the
// task the method is told about. It may call Close, or start Shutdown on a
// goroutine of its own. The one exception is TaskHandle.Cancel, which
// completes the handle at once. OnCompleted follows when the function
// returns.
type TaskLifecycleListener interface {
	OnSubmitted(groupKey, taskID string)
	OnStarted(groupKey, taskID string)
	OnCompleted(groupKey, taskID string, result GroupResult[any])
	OnRejected(groupKey, taskID, reason string)
}

// ListenerFuncs is a TaskLifecycleListener made of optional functions. A nil
// field ignores its event. Its zero value is a listener that ignores
// everything.
type ListenerFuncs struct {
	Submitted func(groupKey, taskID string)
	Started   func(groupKey, taskID string)
	Completed func(groupKey, taskID string, result GroupResult[any])
	Rejected  func(groupKey, taskID, reason string)
}

// OnSubmitted calls f.Submitted if it is set.
func (f ListenerFuncs) OnSubmitted(groupKey, taskID string) {
	if f.Submitted != nil {
		f.Submitted(groupKey, taskID)
	}
}

// OnStarted calls f.Started if it is set.
func (f ListenerFuncs) OnStarted(groupKey, taskID string) {
	if f.Started != nil {
		f.Started(groupKey, taskID)
	}
}

// OnCompleted calls f.Completed if it is set.
func (f ListenerFuncs) OnCompleted(groupKey, taskID string, result GroupResult[any]) {
	if f.Completed != nil {
		f.Completed(groupKey, taskID, result)
	}
}

// OnRejected calls f.Rejected if it is set.
func (f ListenerFuncs) OnRejected(groupKey, taskID, reason string) {
	if f.Rejected != nil {
		f.Rejected(groupKey, taskID, reason)
	}
}

// Listeners returns one listener that calls each non-nil listener of ls in
// order, recovering a panic in each one separately, so that one listener's
// panic neither stops the others nor reaches the executor. With no non-nil
// listener it returns a listener that ignores everything.
func Listeners(ls ...TaskLifecycleListener) TaskLifecycleListener {
	m := make(multiListener, 0, len(ls))
	for _, l := range ls {
		if l != nil {
			m = append(m, l)
		}
	}
	return m
}

// multiListener is the listener Listeners returns.
type multiListener []TaskLifecycleListener

func (m multiListener) OnSubmitted(groupKey, taskID string) {
	for _, l := range m {
		notifySubmitted(l, groupKey, taskID)
	}
}

func (m multiListener) OnStarted(groupKey, taskID string) {
	for _, l := range m {
		notifyStarted(l, groupKey, taskID)
	}
}

func (m multiListener) OnCompleted(groupKey, taskID string, result GroupResult[any]) {
	for _, l := range m {
		notifyCompleted(l, groupKey, taskID, result)
	}
}

func (m multiListener) OnRejected(groupKey, taskID, reason string) {
	for _, l := range m {
		notifyRejected(l, groupKey, taskID, reason)
	}
}

// The notify helpers call one listener method, recovering a panic in it. A
// nil listener costs one comparison.

func notifySubmitted(l TaskLifecycleListener, groupKey, taskID string) {
	if l != nil {
		defer ignorePanic()
		l.OnSubmitted(groupKey, taskID)
	}
}

func notifyStarted(l TaskLifecycleListener, groupKey, taskID string) {
	if l != nil {
		defer ignorePanic()
		l.OnStarted(groupKey, taskID)
	}
}

func notifyCompleted(l TaskLifecycleListener, groupKey, taskID string, r GroupResult[any]) {
	if l != nil {
		defer ignorePanic()
		l.OnCompleted(groupKey, taskID, r)
	}
}

func notifyRejected(l TaskLifecycleListener, groupKey, taskID, reason string) {
	if l != nil {
		defer ignorePanic()
		l.OnRejected(groupKey, taskID, reason)
	}
}

func ignorePanic() { _ = recover() }

// tell tells l, if any, of an event of t through notify. A Do's task ID is
// made only then (see taskID). With no listener it is inlined.
func (t *task) tell(l TaskLifecycleListener, notify func(l TaskLifecycleListener, groupKey, taskID string)) {
	if l != nil {
		t.tellTo(l, notify)
	}
}

// tellTo is tell's call of notify, out of line so that tell inlines.
func (t *task) tellTo(l TaskLifecycleListener, notify func(l TaskLifecycleListener, groupKey, taskID string)) {
	notify(l, t.key(), t.taskID())
}

// tellRejected tells l, if any, that t was turned away for reason.
func (t *task) tellRejected(l TaskLifecycleListener, reason string) {
	if l != nil {
		notifyRejected(l, t.key(), t.taskID(), reason)
	}
}
