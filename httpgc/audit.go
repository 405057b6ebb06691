package httpgc

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kobe/groupconc"
)

// Every write is audited once, when its answer is written. ServeHTTP wraps
// the ResponseWriter of a request that a write route matches. A write that
// reaches the executor leaves its event there. Any other answer of 400 or
// more is a refusal, told with the error the answer carries.

// auditWriter watches the answer to one write.
type auditWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	msg    string      // the error fail wrote, if any
	ev     *AuditEvent // set when the write reached the executor
}

func (w *auditWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer below.
func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// watchWrite returns w wrapped for auditing if Audit is set and r matches
// a write route, with that route's Action.
func (h *Handler) watchWrite(w http.ResponseWriter, r *http.Request) (*auditWriter, Action) {
	if h.o.Audit == nil || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil, 0
	}
	_, pattern := h.mux.Handler(r)
	a, ok := h.writeRoutes[pattern]
	if !ok {
		return nil, 0
	}
	return &auditWriter{ResponseWriter: w}, a
}

// audited tells Audit of the write aw answered.
func (h *Handler) audited(aw *auditWriter, r *http.Request, a Action) {
	var ev AuditEvent
	switch {
	case aw.ev != nil:
		ev = *aw.ev
	case aw.status >= http.StatusBadRequest:
		ev = AuditEvent{At: time.Now(), Who: h.who(r), Action: a, Refused: aw.msg}
		if ev.Refused == "" {
			ev.Refused = strings.ToLower(http.StatusText(aw.status))
		}
		ev.Err = fmt.Errorf("%w: %s", ErrRefused, ev.Refused)
	default:
		return
	}
	ev.Status = aw.status
	ev.Name = cut(requestedName(r))
	h.o.Audit(ev)
}

// leave hands ev, a write that reached the executor, to w's auditing.
func leave(w http.ResponseWriter, ev AuditEvent) {
	if aw, ok := w.(*auditWriter); ok {
		aw.ev = &ev
	}
}

// requestedName is the group r names, also when the mux has not matched
// r yet, as for a request refused for its Host.
func requestedName(r *http.Request) string {
	if r.Pattern != "" {
		name, _ := groupName(r)
		return name
	}
	if q := r.URL.Query(); q.Has("group") {
		return q.Get("group")
	}
	parts := strings.Split(r.URL.EscapedPath(), "/")
	if len(parts) > 3 && parts[1] == "api" && parts[2] == "groups" {
		name, _ := url.PathUnescape(parts[3])
		return name
	}
	return ""
}

// cut shortens s to at most maxEcho bytes, before a rune, as quoted does.
func cut(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	n := maxEcho
	for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}

func (h *Handler) who(r *http.Request) string {
	if h.o.Identify != nil {
		return h.o.Identify(r)
	}
	return r.RemoteAddr
}

// apply makes change to st's group and returns the write's audit record,
// with the group's stats and overrides around it. change is given the
// overrides before it. The writes lock is held through it, and is let go
// even if change panics. Identify is asked first, outside the lock, so
// that a slow or panicking Identify holds up no other write.
func (h *Handler) apply(r *http.Request, a Action, st groupconc.GroupStats, change func(before groupconc.GroupOverride) error) AuditEvent {
	ev := AuditEvent{Who: h.who(r), Action: a, Group: st.GroupKey}
	h.writes.Lock()
	defer h.writes.Unlock()
	ev.Before = st
	ev.OverrideBefore, _ = h.e.GroupOverride(st.GroupKey)
	ev.Err = change(ev.OverrideBefore)
	ev.At = time.Now()
	ev.After, _ = h.e.GroupStats(ev.Group)
	ev.OverrideAfter, _ = h.e.GroupOverride(ev.Group)
	return ev
}
