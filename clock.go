package groupconc

import "time"

// clock reads the monotonic clock alone, as offsets from an epoch, which
// costs about half of time.Now (time.Since skips the wall clock); Submit
// reads it once per task (BenchmarkSubmitWait), and a task keeps its times
// as such offsets. epoch.Add of one is a time with the monotonic reading
// time.Now would have had; its wall-clock part misses any step of the system
// clock since the epoch.
type clock struct{ epoch time.Time }

func (c *clock) now() int64 { return int64(time.Since(c.epoch)) }

// since returns the time elapsed since t was submitted, as an offset from
// its Submitted.
func (t *task) since() int64 { return t.exec.clock.now() - t.submitted }

// at returns the time that offset, from since, stands for: 0 is the time t
// was submitted.
func (t *task) at(offset int64) time.Time {
	return t.exec.clock.epoch.Add(time.Duration(t.submitted + offset))
}
