package httpgc_test

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc/httpgc"
)

// A DisplayKey that ends the goroutine building a snapshot (runtime.Goexit,
// as a test's t.FailNow does) costs that snapshot alone: the stream open
// then, and one opened later, get the next ones.
func TestADisplayKeyThatEndsTheProducerStopsNoStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var armed atomic.Bool
		armed.Store(true)
		f := newFixture(t, httpgc.Options{Interval: time.Second, Heartbeat: time.Hour,
			DisplayKey: func(k string) string {
				buf := make([]byte, 8192)
				if strings.Contains(string(buf[:runtime.Stack(buf, false)]), ".produce(") && armed.CompareAndSwap(true, false) {
					runtime.Goexit() // once, in the producer
				}
				return k
			}})
		c := watch(f.h, nil)
		synctest.Wait()
		time.Sleep(5 * time.Second) // fake clock
		synctest.Wait()
		c2 := watch(f.h, nil)
		time.Sleep(5 * time.Second) // fake clock
		synctest.Wait()
		assert.False(t, armed.Load(), "DisplayKey never ran in the producer")
		assert.NotEmpty(t, c.ids(), "the open stream got no snapshot")
		assert.NotEmpty(t, c2.ids(), "a later stream got no snapshot")
		c.leave()
		c2.leave()
	})
}
