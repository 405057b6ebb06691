package httpgc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// The first rule of why.go's table that holds decides, at each rule's
// edge.
func TestReasonTakesTheFirstRuleThatHolds(t *testing.T) {
	const long = 10 * time.Minute
	const none = groupconc.Unlimited
	for _, c := range []struct {
		name string
		st   groupconc.GroupStats
		want string
	}{
		{"paused before all", groupconc.GroupStats{Paused: true, Waiting: 1, WaitingGlobal: 1, OldestRunning: long}, "paused"},
		{"global cap before running long", groupconc.GroupStats{Waiting: 1, WaitingGlobal: 1, OldestRunning: long, MaxInFlight: none}, "global cap"},
		{"running exactly LongRun", groupconc.GroupStats{OldestRunning: long, MaxInFlight: none, MaxConcurrency: 2, RunningCost: 1}, "running long: 10 m"},
		{"running just short of LongRun", groupconc.GroupStats{OldestRunning: long - 1, MaxInFlight: none, MaxConcurrency: 2, RunningCost: 1}, ""},
		{"bulkhead before concurrency", groupconc.GroupStats{Waiting: 1, Running: 2, InFlight: 2, MaxInFlight: 2, RunningCost: 2, MaxConcurrency: 2}, "own limit: bulkhead"},
		{"a task before a bulkhead below its bound", groupconc.GroupStats{Waiting: 1, Running: 2, InFlight: 2, MaxInFlight: 3, RunningCost: 2, MaxConcurrency: 2}, "own limit"},
		{"a full bulkhead every waiting task has passed", groupconc.GroupStats{Waiting: 1, Running: 1, InFlight: 2, MaxInFlight: 2, RunningCost: 1, MaxConcurrency: 1}, "own limit: concurrency"},
		{"the first waiting task has passed a full bulkhead", groupconc.GroupStats{Waiting: 2, Running: 1, InFlight: 2, MaxInFlight: 2, RunningCost: 1, MaxConcurrency: 1}, "own limit: concurrency"},
		{"a bulkhead that costly tasks fill", groupconc.GroupStats{Waiting: 1, Running: 1, InFlight: 1, MaxInFlight: 4, RunningCost: 1, MaxConcurrency: 1}, "own limit"},
		{"global cap while the first task waits past it", groupconc.GroupStats{Waiting: 2, WaitingGlobal: 1, Running: 1, InFlight: 2, MaxInFlight: none, RunningCost: 1, MaxConcurrency: 1}, "own limit: concurrency"},
		{"a blocked caller before a full bulkhead", groupconc.GroupStats{Blocked: 1, Running: 2, InFlight: 2, MaxInFlight: 2, RunningCost: 2, MaxConcurrency: 2}, "own limit: bulkhead"},
		{"a blocked caller at its concurrency", groupconc.GroupStats{Blocked: 1, Running: 1, InFlight: 1, MaxInFlight: none, RunningCost: 1, MaxConcurrency: 1}, "own limit: concurrency"},
		{"a blocked caller before running long", groupconc.GroupStats{Blocked: 1, OldestRunning: long, MaxInFlight: none, RunningCost: 1, MaxConcurrency: 2}, "own limit"},
		{"an Unlimited bulkhead is never full", groupconc.GroupStats{Waiting: 1, InFlight: 5, MaxInFlight: none, RunningCost: 1, MaxConcurrency: 8}, "own limit"},
		{"concurrency held", groupconc.GroupStats{Waiting: 1, InFlight: 3, MaxInFlight: none, RunningCost: 2, MaxConcurrency: 2}, "own limit: concurrency"},
		{"permits being handed on", groupconc.GroupStats{Waiting: 1, InFlight: 2, MaxInFlight: none, RunningCost: 1, MaxConcurrency: 2}, "own limit"},
	} {
		assert.Equal(t, c.want, reason(c.st, long, false), c.name)
	}
}

// A duration is written in its largest whole unit.
func TestCoarseWritesTheLargestWholeUnit(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                             "0 s",
		12 * time.Second:              "12 s",
		time.Minute - time.Nanosecond: "59 s",
		time.Minute:                   "1 m",
		time.Hour - time.Nanosecond:   "59 m",
		time.Hour:                     "1 h",
		3*time.Hour + 59*time.Minute:  "3 h",
		50 * time.Hour:                "50 h",
	} {
		assert.Equal(t, want, coarse(d), "%v", d)
	}
}

// A counter read below its sample belongs to a group made again, which
// counts from 0: its delta is the counter itself.
func TestDeltaOfACounterMadeAgainIsTheCounter(t *testing.T) {
	assert.Equal(t, uint64(2), delta(7, 5))
	assert.Equal(t, uint64(0), delta(5, 5))
	assert.Equal(t, uint64(3), delta(3, 5))
}
