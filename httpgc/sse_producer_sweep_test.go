package httpgc_test

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
)

// builds records when a DisplayKey that takes step per key ran: one span
// per snapshot, its keys read back to back.
type builds struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

func (b *builds) displayKey(step time.Duration) func(string) string {
	return func(k string) string {
		start := time.Now()
		time.Sleep(step)
		b.mu.Lock()
		defer b.mu.Unlock()
		if n := len(b.spans); n > 0 && b.spans[n-1][1].Equal(start) {
			b.spans[n-1][1] = time.Now()
		} else {
			b.spans = append(b.spans, [2]time.Time{start, time.Now()})
		}
		return k
	}
}

// A snapshot's wait is Interval less its build, so snapshots start every
// Interval, while a build takes a tenth of Interval or less. A longer
// build makes the wait nine times the build, exactly. Each snapshot says
// its wait (nextMs), and the next build starts when it said.
func TestTheWaitBetweenSnapshotsIsIntervalLessTheBuildOrNineTimesIt(t *testing.T) {
	for _, c := range []struct {
		name           string
		interval, step time.Duration
		wait           func(took time.Duration) time.Duration
	}{
		{"quick", time.Second, 10 * time.Millisecond, func(took time.Duration) time.Duration { return time.Second - took }},
		{"slow", 100 * time.Millisecond, 20 * time.Millisecond, func(took time.Duration) time.Duration { return 9 * took }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b builds
				f := newFixture(t, httpgc.Options{Interval: c.interval, History: -1, DisplayKey: b.displayKey(c.step)})
				cl := watch(f.h, nil)
				time.Sleep(3 * time.Second)
				synctest.Wait()
				cl.leave()
				evs, _ := cl.rec.events()
				b.mu.Lock()
				defer b.mu.Unlock()
				require.GreaterOrEqual(t, len(b.spans), 3)
				var snaps int
				for i, ev := range evs {
					if ev.name != "snapshot" || snaps+1 >= len(b.spans) {
						continue
					}
					var snap struct{ NextMs int64 }
					require.NoError(t, json.Unmarshal([]byte(ev.data), &snap), "event %d", i)
					span, next := b.spans[snaps], b.spans[snaps+1]
					took := span[1].Sub(span[0])
					require.Greater(t, took, time.Duration(0))
					want := c.wait(took)
					assert.Equal(t, want.Milliseconds(), snap.NextMs, "snapshot %d took %v", snaps+1, took)
					assert.Equal(t, want, next[0].Sub(span[1]), "the build after snapshot %d", snaps+1)
					snaps++
				}
				assert.GreaterOrEqual(t, snaps, 2)
			})
		})
	}
}

// A frame left by an earlier producer is stale. A stream that joins while
// the new producer builds its first frame gets that frame, not the stale
// one.
func TestAStreamJoiningBeforeANewProducersFirstFrameGetsNoStaleOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, armed, release := heldFixture(t)
		first := watch(f.h, nil)
		synctest.Wait()
		require.Equal(t, []string{"1"}, first.ids())
		first.leave()

		armed.Store(true)
		a := watch(f.h, nil)
		synctest.Wait() // its producer builds frame 2
		b := watch(f.h, nil)
		synctest.Wait()
		assert.Empty(t, b.ids(), "frame 1, left by the producer before")
		armed.Store(false)
		close(release)
		synctest.Wait()
		assert.Equal(t, []string{"2"}, a.ids())
		assert.Equal(t, []string{"2"}, b.ids())
		a.leave()
		b.leave()
	})
}

// A stream that leaves stops nothing for the others: they get a snapshot
// every Interval still.
func TestAStreamLeavingStopsNoOtherStreamsSnapshots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: time.Second, Heartbeat: time.Hour})
		stays, leaves := watch(f.h, nil), watch(f.h, nil)
		synctest.Wait()
		leaves.leave()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"1", "2", "3"}, stays.ids())
		stays.leave()
	})
}

// The last stream out stops its producer and returns only once it has,
// also when it is building a frame, so that no goroutine of the handler
// outlives the last stream.
func TestTheLastStreamOutReturnsOnlyOnceItsProducerHas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, armed, release := heldFixture(t)
		armed.Store(true)
		c := watch(f.h, nil)
		synctest.Wait() // its producer builds the first frame
		c.cancel()
		synctest.Wait()
		assert.False(t, isClosed(c.done), "the stream returned while its producer ran")
		close(release)
		<-c.done
		synctest.Wait()
		assert.Zero(t, producers())
	})
}

// A stream opened while two stopped producers wind down, the later
// waiting for the earlier, waits for the later one too: one producer
// builds a frame at a time. The later one builds a frame or not as its
// select falls, so the race is run until it does.
func TestAStreamOpenedAsTwoProducersWindDownWaitsForTheLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inside, most atomic.Int32
		var release atomic.Pointer[chan struct{}]
		f := newFixture(t, httpgc.Options{History: -1, Heartbeat: time.Hour, DisplayKey: func(k string) string {
			if r := release.Load(); r != nil && k == "a" {
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-*r
				inside.Add(-1)
			}
			return k
		}})
		for trial := 0; ; trial++ {
			require.Less(t, trial, 50, "the later producer never built a frame")
			first, second := make(chan struct{}), make(chan struct{})
			release.Store(&first)
			a := watch(f.h, nil)
			synctest.Wait() // its producer builds a frame
			a.cancel()
			synctest.Wait() // a waits for that producer
			b := watch(f.h, nil)
			synctest.Wait() // b's producer waits for a's
			b.cancel()
			synctest.Wait() // b waits for its producer
			release.Store(&second)
			close(first)
			synctest.Wait() // a's producer has returned; b's returns, or builds a frame
			building := inside.Load() == 1
			var c *client
			if building {
				c = watch(f.h, nil)
				synctest.Wait()
			}
			release.Store(nil)
			close(second)
			<-a.done
			<-b.done
			if c != nil {
				c.leave()
			}
			if building {
				assert.Equal(t, int32(1), most.Load(), "producers that built a frame at once")
				return
			}
		}
	})
}

// heldFixture is a fixture without history whose frames, once armed is
// set, are held in the making until release is closed.
func heldFixture(t *testing.T) (f *fixture, armed *atomic.Bool, release chan struct{}) {
	armed, release = new(atomic.Bool), make(chan struct{})
	f = newFixture(t, httpgc.Options{History: -1, DisplayKey: func(k string) string {
		if armed.Load() {
			<-release
		}
		return k
	}})
	return f, armed, release
}
