package groupconc

import (
	"fmt"
	"time"
)

// TaskStatus is how a task ended.
type TaskStatus int

const (
	// StatusSuccess means the function returned a nil error, or a rejection
	// handler returned a fallback value.
	StatusSuccess TaskStatus = iota + 1
	// StatusFailed means the function returned an error, panicked or called
	// runtime.Goexit, or a rejection handler failed.
	StatusFailed
	// StatusCancelled means the task was cancelled before it ran, through
	// its handle, or returned its context's error after being cancelled,
	// or context.DeadlineExceeded once its deadline had passed.
	StatusCancelled
	// StatusRejected means a queue threshold turned the task away and it did
	// not run.
	StatusRejected
)

// String returns "SUCCESS", "FAILED", "CANCELLED" or "REJECTED".
func (s TaskStatus) String() string {
	switch s {
	case StatusSuccess:
		return "SUCCESS"
	case StatusFailed:
		return "FAILED"
	case StatusCancelled:
		return "CANCELLED"
	case StatusRejected:
		return "REJECTED"
	}
	return fmt.Sprintf("TaskStatus(%d)", int(s))
}

// GroupResult is the outcome of one task.
//
// Submitted, Start and End carry monotonic clock readings. So comparing them
// with each other or with time.Now (Sub, Before, After) is exact, as
// Duration and QueueWait do. To keep Submit cheap, their wall-clock part is
// read once, when New makes the executor, and advanced by the monotonic
// clock. So a step of the system clock while the executor lives does not
// show in them.
type GroupResult[T any] struct {
	GroupKey  string
	TaskID    string
	Status    TaskStatus
	Value     T         // set on StatusSuccess
	Err       error     // set on Failed, Cancelled, Rejected
	Submitted time.Time // when Submit accepted it
	// Start is when it held all its permits. It is End if it never ran. It
	// is the End of the task that handed it its last permit, if that task
	// ran.
	Start time.Time
	End   time.Time
}

// Duration returns End - Start, which is how long the task ran, without its
// wait.
func (r GroupResult[T]) Duration() time.Duration { return r.End.Sub(r.Start) }

// QueueWait returns Start - Submitted, which is how long the task waited for
// permits.
func (r GroupResult[T]) QueueWait() time.Duration { return r.Start.Sub(r.Submitted) }

// PanicError is the Err of a task that panicked or called runtime.Goexit (as
// t.FailNow does). Value is what was passed to panic. Stack is the
// goroutine's stack at the panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string {
	if p.Value == errGoexit {
		return errGoexit.Error()
	}
	return fmt.Sprintf("groupconc: task panicked: %v", p.Value)
}

// Unwrap returns Value when it is an error, so errors.Is sees through a
// panic(err).
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
