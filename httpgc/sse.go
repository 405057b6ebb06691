package httpgc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// writeTimeout bounds each write to a stream, so a client that stopped
// reading (or a half-closed proxy) cannot hold its request forever. It is
// set before each write, so a server's WriteTimeout, counted from the
// request's start, never cuts a healthy stream.
const writeTimeout = 10 * time.Second

// stream is the handler's server-sent events. One producer goroutine,
// running while at least one client listens, builds a frame per interval
// that every client writes. A client that falls behind writes the latest
// frame only. Frames are coalesced, never queued.
type stream struct {
	mu      sync.Mutex
	clients map[*client]struct{} // guarded by mu
	stop    chan struct{}        // guarded by mu; closed to stop the producer, nil when none runs
	done    chan struct{}        // guarded by mu; closed when that producer has returned
	ending  chan struct{}        // guarded by mu; the done of a producer stopped, until it returns
	closed  bool                 // guarded by mu; set by Close
	closing chan struct{}        // closed by Close

	frame atomic.Pointer[frame] // the latest, nil until the producer's first
	seq   atomic.Uint64         // the last frame's id
	// marshal is how long the last frame took to marshal. The producer
	// alone reads and writes it.
	marshal time.Duration
}

// frame is one snapshot, ready to write.
type frame struct {
	seq         uint64
	snapshot    []byte // an "event: snapshot" with its id
	warnVersion uint64 // the warnings' version that warnings shows
	warnings    []byte // an "event: warnings": the recent pressure warnings
}

// client is one open stream. poke has room for one wake-up, so the
// producer never waits for a client.
type client struct{ poke chan struct{} }

func (s *stream) init() {
	s.clients = map[*client]struct{}{}
	s.closing = make(chan struct{})
}

// snapshotJSON is the data of a snapshot event. NextMs is how long the
// producer waits before the next snapshot, so that a page can tell a slow
// stream from a dead one.
type snapshotJSON struct {
	Stats   statsJSON `json:"stats"`
	Groups  []row     `json:"groups"`
	History totalJSON `json:"history"`
	NextMs  int64     `json:"nextMs"`
}

// join adds a client, starting the producer if none runs. It returns nil if
// Close was called or MaxClients are open.
func (h *Handler) join() *client {
	s := &h.stream
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.clients) >= h.o.MaxClients {
		return nil
	}
	c := &client{poke: make(chan struct{}, 1)}
	s.clients[c] = struct{}{}
	switch {
	case s.stop == nil:
		// A frame left by an earlier producer is stale. The new one
		// publishes at once and pokes every client.
		// One stopped as the last client left may still be building a
		// frame: the new one waits for it, so that one producer at a time
		// runs and frames go out in the order they were built.
		s.frame.Store(nil)
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go h.produce(s.stop, s.done, 0, s.ending)
	case s.frame.Load() != nil:
		c.poke <- struct{}{} // the current snapshot, at once
	}
	return c
}

// leave removes c. The last client out stops the producer and waits for it,
// so no goroutine of the handler outlives its last stream.
func (h *Handler) leave(c *client) {
	s := &h.stream
	s.mu.Lock()
	delete(s.clients, c)
	var done chan struct{}
	if len(s.clients) == 0 && s.stop != nil {
		close(s.stop)
		done = s.done
		s.stop, s.done, s.ending = nil, nil, done
	}
	s.mu.Unlock()
	if done != nil {
		<-done // outside mu: the producer takes it to poke clients
		s.mu.Lock()
		if s.ending == done {
			s.ending = nil
		}
		s.mu.Unlock()
	}
}

// produce publishes a frame after wait, and then every Interval until
// stop. It waits at least nine times as long as a frame took to build, so
// that with very many groups it takes at most a tenth of a CPU. The frame
// says that wait (nextMs), which it keeps to. A DisplayKey that ends the
// goroutine (runtime.Goexit) ends one frame. Another goroutine takes over
// an Interval later, so that no stream is left without frames. It starts
// once the producer before it, if any, has returned (after).
func (h *Handler) produce(stop <-chan struct{}, done chan<- struct{}, wait time.Duration, after <-chan struct{}) {
	if after != nil {
		<-after
	}
	stopped := false
	defer func() {
		if !stopped {
			go h.produce(stop, done, h.o.Interval, nil)
			return
		}
		close(done)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-stop:
			stopped = true
			return
		}
		t.Reset(h.publish())
	}
}

// publish builds a frame, makes it the latest and wakes every client. Its
// rows are of the groups with something going on (ActiveGroupStats). So a
// frame costs what is active, not every key the executor remembers. The
// count of groups it shows is Stats().Groups. It returns the wait before
// the next frame is built, which the frame carries as nextMs: Interval
// less the frame's time, and at least nine times it. The frame's time
// counts the last frame's marshalling for this one's, which comes after.
func (h *Handler) publish() time.Duration {
	start := time.Now()
	s := &h.stream
	_, rows := h.groups(h.e.ActiveGroupStats(), byOldestWait, h.o.Rows, "")
	snap := snapshotJSON{Stats: h.stats(), Groups: rows, History: h.totalHistory()}
	took := time.Since(start) + s.marshal
	wait := max(h.o.Interval-took, 9*took)
	snap.NextMs = wait.Milliseconds()
	marshalled := time.Now()
	data, err := json.Marshal(snap)
	s.marshal = time.Since(marshalled)
	if err != nil {
		return h.o.Interval
	}
	f := &frame{seq: s.seq.Add(1)}
	if prev := s.frame.Load(); prev != nil && prev.warnVersion == h.warnings.current() {
		f.warnVersion, f.warnings = prev.warnVersion, prev.warnings
	} else {
		list, v := h.warnings.list()
		data, _ := json.Marshal(list)
		f.warnVersion, f.warnings = v, fmt.Appendf(nil, "event: warnings\ndata: %s\n\n", data)
	}
	f.snapshot = fmt.Appendf(nil, "id: %d\nevent: snapshot\ndata: %s\n\n", f.seq, data)
	s.frame.Store(f)
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.clients {
		select {
		case c.poke <- struct{}{}:
		default: // already woken: it will write this frame, the latest
		}
	}
	return wait
}

// events serves GET api/events. It sends a snapshot at once, then one per
// Interval. It sends the recent warnings whenever they change, and a
// heartbeat comment every Heartbeat. A reconnecting client (Last-Event-ID)
// gets the current snapshot, and old ones are not replayed. Another
// origin's page never gets here (readAPI), so it takes no slot.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	if r.Method == http.MethodHead {
		hd.Set("Content-Type", "text/event-stream")
		return
	}
	c := h.join()
	if c == nil {
		hd.Set("Retry-After", "10")
		fail(w, http.StatusServiceUnavailable, "too many streams open (Options.MaxClients), or the handler is closed")
		return
	}
	defer h.leave(c)
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no") // tell nginx not to buffer the stream
	w.WriteHeader(http.StatusOK)

	rc := http.NewResponseController(w)
	defer h.endOnClose(rc)()
	send := func(parts ...[]byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // unsupported by some writers: then none
		select {
		case <-h.stream.closing:
			return false // Close may have moved the deadline before this write's
		default:
		}
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 2000\n\n")) {
		return
	}
	heartbeat := time.NewTicker(h.o.Heartbeat)
	defer heartbeat.Stop()
	var sent, warnVersion uint64
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.stream.closing:
			return
		case <-heartbeat.C:
			if !send([]byte(": heartbeat\n\n")) {
				return
			}
		case <-c.poke:
			f := h.stream.frame.Load()
			if f == nil || f.seq <= sent {
				continue
			}
			sent = f.seq
			parts := [][]byte{f.snapshot}
			if f.warnVersion != warnVersion {
				warnVersion = f.warnVersion
				parts = append(parts, f.warnings)
			}
			if !send(parts...) {
				return
			}
		}
	}
}

// endOnClose moves the write deadline of the stream rc writes to now once
// Close is called, so a write waiting for a client that stopped reading
// fails at once rather than at its timeout. It returns the function that
// stops that. The stream calls it before it returns, as rc cannot be used
// after.
func (h *Handler) endOnClose(rc *http.ResponseController) (stop func()) {
	stopped, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-h.stream.closing:
			_ = rc.SetWriteDeadline(time.Now())
		case <-stopped:
		}
	}()
	return func() {
		close(stopped)
		<-done
	}
}

// Close ends every stream and refuses new ones (503). The page then falls
// back to polling. It also stops the history's sampler and watching the
// executor's pressure warnings. Call it before http.Server.Shutdown, which
// waits for open requests and would wait for streams. A stream whose write
// waits for a client that stopped reading ends too, as its write deadline
// is moved to now. It returns at once, and always nil.
func (h *Handler) Close() error {
	h.stopHistory()
	h.unwatch()
	s := &h.stream
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	return nil
}
