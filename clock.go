package groupconc

import (
	"math"
	"time"
)

// clock returns the time elapsed since e's epoch, read on the monotonic
// clock alone. That costs about half of time.Now, since time.Since skips the
// wall clock. Submit reads it once per task (BenchmarkSubmitWait), and a
// task keeps its times as such offsets. The e.epoch.Add of one is a time
// with the monotonic reading time.Now would have had. Its wall-clock part
// misses any step of the system clock since New.
func (e *GroupExecutor) clock() int64 { return int64(time.Since(e.epoch)) }

// noTime stands for a clock reading not taken.
const noTime int64 = -1

// endUnread stands for the End of a Do's task, not read when its function
// returned: see run.
const endUnread int64 = math.MinInt64

// since returns the time elapsed since t was submitted, as an offset from
// its Submitted.
func (t *task) since() int64 { return t.exec().clock() - t.permits.Submitted() }

// at returns the time that offset, from since, stands for. Zero is the time
// t was submitted.
func (t *task) at(offset int64) time.Time {
	return t.exec().epoch.Add(time.Duration(t.permits.Submitted() + offset))
}
