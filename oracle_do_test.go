package groupconc_test

// The oracle's view of Do. A Do has no handle, and its task's ID is of the
// library's making ("do-" and a number), told first to the listener as its
// task is accepted, on the goroutine that called Do. The oracle learns it
// there (doAccepted), so that the wrapper of fn knows, as for a task,
// whether fn runs after a rejection, without permits; and so that the
// task's events and outcome count as those of any accepted task.

import "github.com/kobe/groupconc"

// oracleDo is one Do call of groupKey, made on a goroutine of its own.
type oracleDo struct {
	groupKey string

	// gid, taskID and bad are guarded by oracle.mu.
	gid    string // the goroutine that calls Do
	taskID string // its task's ID once accepted; "" if it never was
	bad    []string
}

// watchDos readies o for Do calls. Call it before the executor is made:
// the recorder's hook is read without a lock.
func (o *oracle) watchDos() {
	o.dos, o.doKeys = make(map[string]*oracleDo), make(map[string]bool)
	o.rec.doAccepted = o.doAccepted
}

// doStart records the calling goroutine as the caller of d. Call it on
// that goroutine, just before Do.
func (o *oracle) doStart(d *oracleDo) {
	gid := goroutineID()
	o.mu.Lock()
	defer o.mu.Unlock()
	d.gid = gid
	o.dos[gid] = d
}

// doAccepted is told of a Do's task as the listener hears it accepted. It
// runs before the recorder keeps the event, so no check sees the event of
// a task that is neither tracked nor a Do's. A Do the oracle did not start
// is left to checkEvents, which reports it.
func (o *oracle) doAccepted(groupKey, taskID string) {
	gid := goroutineID()
	o.mu.Lock()
	d := o.dos[gid]
	switch {
	case d == nil:
	case d.taskID != "" || d.groupKey != groupKey:
		d.bad = append(d.bad, "a second task accepted on its goroutine: "+groupKey+"/"+taskID)
		d = nil
	default:
		d.taskID = taskID
		o.doKeys[oracleKey(groupKey, taskID)] = true
		o.accepted.Add(1)
	}
	o.mu.Unlock()
	if d != nil {
		o.rec.with(groupKey, taskID, func(l *oracleTaskLog) { l.wrapped = true })
	}
}

// id returns d's task ID, and what the oracle found wrong with d so far.
func (o *oracle) doID(d *oracleDo) (taskID string, bad []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return d.taskID, d.bad
}

// oracleDoTask wraps fn, the function of d, as oracleTaskCost does. It
// also checks that fn runs on d's goroutine, after d's task was accepted.
func oracleDoTask[T any](o *oracle, d *oracleDo, gaugeKey string, cost int, fn groupconc.Task[T]) groupconc.Task[T] {
	return oracleWrap(o, gaugeKey, d.groupKey, cost, func() string {
		gid := goroutineID()
		o.mu.Lock()
		defer o.mu.Unlock()
		if gid != d.gid {
			d.bad = append(d.bad, "fn ran on goroutine "+gid+", not on Do's "+d.gid)
		}
		if d.taskID == "" {
			d.bad = append(d.bad, "fn ran before the listener heard its task accepted")
		}
		return d.taskID
	}, fn)
}

// doEnded counts the final status of an accepted Do's task, as final does
// for an untracked handle (doAccepted counted it accepted).
func (o *oracle) doEnded(s groupconc.TaskStatus) {
	if s >= groupconc.StatusSuccess && s <= groupconc.StatusRejected {
		o.finals[s].Add(1)
	} else {
		o.finals[0].Add(1)
	}
}
