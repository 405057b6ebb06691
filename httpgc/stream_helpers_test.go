package httpgc_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

// recorder is a ResponseWriter for a stream: it keeps what is written (or
// only counts it, with discard), and, while hold is open, holds every
// write, as a client that stopped reading does. A write deadline set at or
// before now fails a held write, as a connection's does.
type recorder struct {
	header  http.Header
	hold    chan struct{} // nil: writes go through; else each write waits until it is closed
	discard bool

	expired chan struct{} // closed by a write deadline at or before now
	expire  sync.Once

	mu   sync.Mutex
	sent http.Header  // guarded by mu; the header as sent
	code int          // guarded by mu
	buf  bytes.Buffer // guarded by mu
	n    int          // guarded by mu; bytes written
}

func newRecorder() *recorder { return &recorder{header: http.Header{}, expired: make(chan struct{})} }

func (r *recorder) SetWriteDeadline(t time.Time) error {
	if !t.After(time.Now()) {
		r.expire.Do(func() { close(r.expired) })
	}
	return nil
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.code == 0 {
		r.code, r.sent = code, r.header.Clone()
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-r.expired:
			return 0, os.ErrDeadlineExceeded
		}
	}
	r.WriteHeader(http.StatusOK)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n += len(p)
	if !r.discard {
		r.buf.Write(p)
	}
	return len(p), nil
}

func (r *recorder) Flush() {}

func (r *recorder) status() (int, http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code, r.sent
}

func (r *recorder) written() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// event is one server-sent event.
type event struct{ id, name, data string }

// events parses what r received: its events, and its comment lines.
func (r *recorder) events() (evs []event, comments []string) {
	r.mu.Lock()
	text := r.buf.String()
	r.mu.Unlock()
	for block := range strings.SplitSeq(text, "\n\n") {
		var ev event
		for line := range strings.SplitSeq(block, "\n") {
			if line == "" {
				continue
			}
			field, value, _ := strings.Cut(line, ": ")
			switch field {
			case "":
				comments = append(comments, value)
			case "id":
				ev.id = value
			case "event":
				ev.name = value
			case "data":
				ev.data = value
			}
		}
		if ev.name != "" {
			evs = append(evs, ev)
		}
	}
	return evs, comments
}

// client is a stream request being served.
type client struct {
	rec    *recorder
	cancel context.CancelFunc
	done   chan struct{}
}

// watch serves a stream request through h on a goroutine of its own,
// writing to rec (a new recorder if nil).
func watch(h http.Handler, rec *recorder, header ...string) *client {
	if rec == nil {
		rec = newRecorder()
	}
	ctx, cancel := context.WithCancel(context.Background())
	req := request(http.MethodGet, "/api/events", "", header...).WithContext(ctx)
	c := &client{rec: rec, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		h.ServeHTTP(rec, req)
	}()
	return c
}

// leave ends c's request and waits until the handler has returned.
func (c *client) leave() {
	c.cancel()
	<-c.done
}

// ids returns the ids of c's snapshot events.
func (c *client) ids() []string {
	evs, _ := c.rec.events()
	var ids []string
	for _, ev := range evs {
		if ev.name == "snapshot" {
			ids = append(ids, ev.id)
		}
	}
	return ids
}

// producers counts the goroutines that build snapshots, in the calling
// test's synctest bubble only: a test that streamed in real time may still
// be winding its producer down when the next one starts.
func producers() int {
	self := make([]byte, 256)
	bubble := bubbleOf(string(self[:runtime.Stack(self, false)]))
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if bubbleOf(g) == bubble && strings.Contains(g, "httpgc.(*Handler).produce(") {
			n++
		}
	}
	return n
}

// bubbleOf returns the synctest bubble named in the header of a goroutine's
// stack ("goroutine 7 [select, synctest bubble 3]:"), "" for none.
func bubbleOf(stack string) string {
	header, _, _ := strings.Cut(stack, "\n")
	_, b, _ := strings.Cut(header, "synctest bubble ")
	b, _, _ = strings.Cut(b, "]")
	return b
}
