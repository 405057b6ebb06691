// Package goroutines counts the goroutines some code starts, for tests.
// runtime.NumGoroutine counts the whole process, where other tests and
// the runtime start goroutines too. A goroutine inherits the pprof labels
// of the one that starts it, so a label counts only the code's own.
package goroutines

import (
	"context"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
)

// calls gives each call of StartedBy a label of its own. So goroutines
// of an earlier call, still ending, are not counted again.
var calls atomic.Int64

// StartedBy runs fn under a new pprof label. It counts the goroutines
// that carry the label as it returns: those fn started, and theirs. It
// returns the goroutine profile too, for a test to show. A goroutine that
// has signalled its end may still be on its way out, and is counted. Call
// it in a synctest bubble and end fn with synctest.Wait to count none such.
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
