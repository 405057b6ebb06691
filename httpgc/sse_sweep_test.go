package httpgc_test

import (
	"net/http"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
)

// stalled is a stream's ResponseWriter whose client stops reading once
// stall is closed. From then on a write waits until its deadline, which a
// later SetWriteDeadline moves, as a connection's does. beforeFuture, if
// set, runs once, before the first deadline in the future after the stall
// is applied.
type stalled struct {
	header http.Header
	stall  chan struct{}

	mu           sync.Mutex
	deadline     time.Time     // guarded by mu
	moved        chan struct{} // guarded by mu; closed when deadline moves
	beforeFuture func()        // guarded by mu
	nowSet       chan struct{} // closed once a deadline at or before now is set
	nowOnce      sync.Once
}

func newStalled() *stalled {
	return &stalled{header: http.Header{}, stall: make(chan struct{}), moved: make(chan struct{}), nowSet: make(chan struct{})}
}

func (s *stalled) Header() http.Header { return s.header }
func (s *stalled) WriteHeader(int)     {}
func (s *stalled) Flush()              {}

func (s *stalled) SetWriteDeadline(t time.Time) error {
	stalledNow := false
	select {
	case <-s.stall:
		stalledNow = true
	default:
	}
	s.mu.Lock()
	var hook func()
	if stalledNow && t.After(time.Now()) {
		hook, s.beforeFuture = s.beforeFuture, nil
	}
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	if !t.After(time.Now()) {
		s.nowOnce.Do(func() { close(s.nowSet) })
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadline = t
	close(s.moved)
	s.moved = make(chan struct{})
	return nil
}

func (s *stalled) Write(p []byte) (int, error) {
	select {
	case <-s.stall:
	default:
		return len(p), nil
	}
	for {
		s.mu.Lock()
		d, moved := s.deadline, s.moved
		s.mu.Unlock()
		if !d.IsZero() && !time.Now().Before(d) {
			return 0, os.ErrDeadlineExceeded
		}
		var expire <-chan time.Time
		var t *time.Timer
		if !d.IsZero() {
			t = time.NewTimer(time.Until(d))
			expire = t.C
		}
		select {
		case <-moved:
		case <-expire:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// serveStream serves a stream request through h to w on a goroutine of its
// own, and returns a channel closed when the handler has returned.
func serveStream(h http.Handler, w http.ResponseWriter) (done chan struct{}) {
	done = make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, request(http.MethodGet, "/api/events", ""))
	}()
	return done
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A client that stops reading holds its stream ten seconds at most: the
// write that waits for it fails then, and the stream ends, freeing its
// slot. A shorter pause keeps the stream. That holds for a snapshot's
// write and for a heartbeat's.
func TestAStreamWhoseClientStopsReadingEndsTenSecondsIntoTheWaitingWrite(t *testing.T) {
	for _, c := range []struct {
		name                string
		interval, heartbeat time.Duration
	}{
		{"snapshot", time.Second, time.Hour},
		{"heartbeat", time.Hour, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, httpgc.Options{Interval: c.interval, Heartbeat: c.heartbeat, MaxClients: 1})
				w := newStalled()
				done := serveStream(f.h, w)
				synctest.Wait() // the first snapshot is written
				close(w.stall)
				time.Sleep(time.Second) // the next write waits from now
				time.Sleep(10*time.Second - time.Millisecond)
				synctest.Wait()
				require.False(t, isClosed(done), "the stream ended before its write waited ten seconds")
				time.Sleep(time.Millisecond)
				synctest.Wait()
				require.True(t, isClosed(done), "the stream outlived its write's ten seconds")
				again := watch(f.h, nil)
				synctest.Wait()
				code, _ := again.rec.status()
				assert.Equal(t, http.StatusOK, code, "the slot is free again")
				again.leave()
			})
		})
	}
}

// Close may come as a stream sets the deadline of its next write, and
// move it to now before that write's own deadline is set. The stream
// still ends at once, without waiting for a client that stopped reading.
func TestCloseAsAWritesDeadlineIsSetEndsTheStreamAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: time.Second, Heartbeat: time.Hour})
		w := newStalled()
		closed := make(chan struct{})
		w.beforeFuture = func() {
			assert.NoError(t, f.h.Close())
			<-w.nowSet // Close has moved the deadline to now
			close(closed)
		}
		done := serveStream(f.h, w)
		synctest.Wait()
		close(w.stall)
		<-closed // at the next snapshot
		synctest.Wait()
		assert.True(t, isClosed(done), "the stream waits in a write after Close")
		<-done
	})
}

// A proxy that buffers responses would hold the stream's events back, so
// the stream asks nginx not to (X-Accel-Buffering: no).
func TestTheStreamAsksProxiesNotToBufferIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{})
		c := watch(f.h, nil)
		defer c.leave()
		synctest.Wait()
		_, header := c.rec.status()
		assert.Equal(t, []string{"no"}, header["X-Accel-Buffering"])
	})
}

// Close stops the history's sampler: a row's history stops growing, while
// the row is still served.
func TestCloseStopsTheHistorysSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: time.Second})
		history := func() []any {
			w := get(f.h, "/api/groups/a")
			require.Equal(t, http.StatusOK, w.Code)
			return object(t, w)["history"].([]any)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		before := history()
		require.NotEmpty(t, before)
		require.NoError(t, f.h.Close())
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, before, history())
	})
}
