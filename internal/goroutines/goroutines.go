// Package goroutines counts the goroutines a piece of code starts, for
// tests that promise it starts none, or few. runtime.NumGoroutine counts
// the whole process, where other tests' goroutines and the runtime's may
// start at any time. A pprof label, which the goroutines a goroutine
// starts inherit, counts only the code's own.
package goroutines

import (
	"context"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
)

// calls numbers the calls of StartedBy, so that each has a label of its
// own: goroutines an earlier call counted, still ending, are not counted
// again.
var calls atomic.Int64

// StartedBy runs fn with a pprof label of its own and counts the goroutines alive
// as it returns that carry the label: those fn started, and theirs. It
// returns the goroutine profile too, alike goroutines counted once with
// their labels, for a test to show when the count is wrong.
func StartedBy(fn func()) (n int, profile string) {
	label := strconv.FormatInt(calls.Add(1), 10)
	pprof.Do(context.Background(), pprof.Labels("startedBy", label), func(context.Context) { fn() })
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	for _, rec := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(rec, `# labels: {"startedBy":"`+label+`"}`) {
			continue
		}
		for _, line := range strings.Split(rec, "\n") {
			if count, _, ok := strings.Cut(line, " @ "); ok {
				c, _ := strconv.Atoi(count)
				n += c
			}
		}
	}
	return n, b.String()
}
