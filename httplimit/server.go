package httplimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kobe/groupconc"
)

// ServerOptions configures Handler and Middleware. The zero value limits
// each path as a group of its own, with the executor's policy, and answers
// a turned-away request with the default statuses.
type ServerOptions struct {
	// Key returns the group key of a request. Nil means the request's path,
	// so each path is a group. Its escapes are undone, but those of '/'
	// and '%' stay, as %2F and %25. So "/%61" is "/a", and "/a%2Fb" is not
	// "/a/b". A byte that is not part of UTF-8 stays escaped too ("%FF").
	// A request whose key is "" gets 400. A CONNECT request has no path,
	// so it is in the group "/".
	Key func(*http.Request) string
	// Priority returns the priority of a request. Nil means Submit.Priority.
	Priority func(*http.Request) groupconc.Priority
	// Cost returns the permits a request takes. Nil means Submit.Cost.
	Cost func(*http.Request) int
	// Submit holds the options every request is submitted with. Set Block
	// and MaxWait for a bounded wait for a queue slot. Options groupconc
	// refuses, such as a negative MaxWait, fail every request with 400 (see
	// StatusCode).
	Submit groupconc.SubmitOptions
	// RetryAfter is what the Retry-After header of a 429 or 503 says,
	// rounded up to whole seconds. Zero means one second. A negative
	// value leaves the header out.
	RetryAfter time.Duration
	// ErrorHandler writes the response of a request that did not run. The
	// err says why (see StatusCode). Nil means WriteError with RetryAfter.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)
}

// ErrNoKey is the error of a request whose key func returned "".
var ErrNoKey = errors.New("httplimit: the request has no group key")

// errNotRun is the error of a request that a RejectionHandler turned away
// without a handler to serve it in its place.
var errNotRun = errors.New("httplimit: turned away, with no response to send")

// Handler returns a handler that runs next under the limits of e. Each
// request is run through groupconc.Do on its own goroutine, with its
// group key, priority and cost from opts. It waits where a task of its
// group would wait. While it waits, its context bounds the wait. A client
// that goes away ends it, and next never runs. (Over HTTP/1.x net/http
// sees a client go away only once the request's body has been read to
// its end. So a request with an unread body waits on, and then runs.
// Bound its wait with a deadline. Over HTTP/2, the unread body of a
// request that waits holds its part of the connection's receive window.
// With net/http's defaults one such upload can stall the body of a
// running request on the same connection. Size the receive buffers of
// http.HTTP2Config so that all the streams' fit in the connection's.)
// Then next runs with a request whose context is the task's. That context
// is cancelled, as a task's is, by ShutdownGroup, EvictGroup and Close. A
// Do of e inside next runs under the request's permits.
//
// A request whose context derives from a running task of e runs at once,
// under that task's permits, as a Do inside a task does. So a server
// whose BaseContext or ConnContext returns a task's context limits none
// of its requests. Derive them from a context of the server's own.
//
// A request that does not run gets the response of opts.ErrorHandler, or
// of WriteError, 429 or 503 with Retry-After, as StatusCode says. A
// RejectionHandler of e may return an http.Handler. It then serves the
// turned-away request in next's place. A RejectionHandler that runs the
// request through Rejection.Run must return what Run returns. That value
// tells Handler that next ran, and that there is no error to answer. One
// that returns (nil, nil) serves nothing. The request then gets 503, as
// StatusCode says of the error ErrorHandler is given, though e counts a
// success.
//
// A panic in next goes on up to net/http, unchanged. The permits are given
// back first. So net/http recovers it and aborts the response as usual,
// and http.ErrAbortHandler stays silent.
//
// Handler panics if e or next is nil. A nil executor acts as one closed,
// and would answer every request 503 as if the server were busy.
func Handler(e *groupconc.GroupExecutor, next http.Handler, opts ServerOptions) http.Handler {
	if e == nil {
		panic("httplimit: Handler of a nil executor")
	}
	if next == nil {
		panic("httplimit: Handler of a nil handler")
	}
	l := &limited{e: e, next: next, opts: opts}
	if l.opts.Key == nil {
		l.opts.Key = pathKey
	}
	l.retryAfter = retryAfterHeader(opts.RetryAfter)
	return l
}

// Middleware returns a function that wraps a handler as Handler does. It
// suits routers that take middleware as func(http.Handler) http.Handler.
// It panics if e is nil, as Handler does.
func Middleware(e *groupconc.GroupExecutor, opts ServerOptions) func(http.Handler) http.Handler {
	if e == nil {
		panic("httplimit: Middleware of a nil executor")
	}
	return func(next http.Handler) http.Handler { return Handler(e, next, opts) }
}

// HeaderKey returns a key func that takes the group key from the request
// header name, matched in any case, as Header.Get does. A request without
// it goes to the group fallback. With a fallback of "", such a request
// gets 400.
func HeaderKey(name, fallback string) func(*http.Request) string {
	// The name is made canonical once, here, so each request looks it up
	// in the map directly, as Header.Get would after canonicalizing it.
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) string {
		if v := r.Header[name]; len(v) > 0 && v[0] != "" {
			return v[0]
		}
		return fallback
	}
}

// pathKey returns r's path with every escape undone but those of '/' and
// '%'. So each spelling of a path is one key, and two paths are two keys.
// URL.Path would make "/a%2Fb" and "/a/b" one group.
func pathKey(r *http.Request) string {
	p := r.URL.EscapedPath()
	if p == "" {
		return "/"
	}
	if !strings.Contains(p, "%") {
		return p
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		c, ok := unhex(p, i)
		switch {
		case !ok:
			b = append(b, p[i])
		case c == '/' || c == '%':
			b = append(b, '%', upperhex[c>>4], upperhex[c&15])
			i += 2
		default:
			b = append(b, c)
			i += 2
		}
	}
	if !utf8.Valid(b) {
		b = escapeInvalid(b)
	}
	return string(b)
}

// escapeInvalid returns b with each byte that is not part of UTF-8
// escaped as %XY. A key then shows and exports as its path does. A '%'
// of the path is escaped already, so the key stays one per path.
func escapeInvalid(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = append(out, '%', upperhex[b[0]>>4], upperhex[b[0]&15])
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

const upperhex = "0123456789ABCDEF"

// unhex returns the byte the escape "%XY" at p[i:] stands for, if one is there.
func unhex(p string, i int) (byte, bool) {
	if p[i] != '%' || i+2 >= len(p) {
		return 0, false
	}
	n, err := strconv.ParseUint(p[i+1:i+3], 16, 8)
	return byte(n), err == nil
}

// limited is the handler that Handler returns.
type limited struct {
	e          *groupconc.GroupExecutor
	next       http.Handler
	opts       ServerOptions
	retryAfter string // the Retry-After header's value, "" for none
}

func (l *limited) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := l.opts.Key(r)
	if key == "" {
		l.fail(w, r, ErrNoKey)
		return
	}
	o := l.opts.Submit
	if l.opts.Priority != nil {
		o.Priority = l.opts.Priority(r)
	}
	if l.opts.Cost != nil {
		o.Cost = l.opts.Cost(r)
	}
	stand, err := groupconc.Do(r.Context(), l.e, key, func(ctx context.Context) (http.Handler, error) {
		rr := r
		if ctx != r.Context() {
			rr = r.WithContext(ctx)
		}
		l.next.ServeHTTP(w, rr)
		return served{}, nil
	}, o)
	switch {
	case stand == served{}:
	case err != nil:
		l.fail(w, r, err)
	case stand != nil:
		stand.ServeHTTP(w, r)
	default:
		l.fail(w, r, errNotRun)
	}
}

// served is what the function a request runs in returns. It tells a
// request that ran from one a RejectionHandler's value stands in for, with
// no flag for the function to set (which would cost an allocation).
type served struct{}

func (served) ServeHTTP(http.ResponseWriter, *http.Request) {}

func (l *limited) fail(w http.ResponseWriter, r *http.Request, err error) {
	if l.opts.ErrorHandler != nil {
		l.opts.ErrorHandler(w, r, err)
		return
	}
	writeError(w, err, l.retryAfter)
}

// StatusCode returns the status that WriteError answers for err, the
// reason a request did not run.
//   - 503 Service Unavailable for a *groupconc.RejectedError of
//     ReasonGlobalQueueFull. The whole server is busy.
//   - 429 Too Many Requests for any other *groupconc.RejectedError. The
//     request's group is busy. That includes ReasonWaitTimeout, a wait
//     that ran past MaxWait.
//   - 503 for the request's context ending while it waited. The client
//     went away, or a deadline passed.
//   - 503 for groupconc.ErrClosed, ErrGroupShutdown and ErrGroupEvicted.
//   - 400 Bad Request for ErrNoKey, and for groupconc.ErrInvalidTask, a
//     priority or cost out of range, or a key with more ancestors than a
//     group may have. Key, Priority and Cost make these from the request,
//     so the request is what is wrong (grpcgc answers InvalidArgument).
//   - 500 Internal Server Error for anything else, such as a policy whose
//     parents form a cycle.
func StatusCode(err error) int {
	var re *groupconc.RejectedError
	switch {
	case errors.As(err, &re):
		if re.Reason == groupconc.ReasonGlobalQueueFull {
			return http.StatusServiceUnavailable
		}
		return http.StatusTooManyRequests
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, groupconc.ErrClosed), errors.Is(err, groupconc.ErrGroupShutdown),
		errors.Is(err, groupconc.ErrGroupEvicted), errors.Is(err, errNotRun):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrNoKey), errors.Is(err, groupconc.ErrInvalidTask):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// WriteError answers a request that err kept from running. It writes the
// status StatusCode gives and that status's text. A 400 says what is
// wrong too, in err's text, which names a value of the request. A 429 or
// 503 carries a Retry-After header of retryAfter, rounded up to whole seconds. Zero
// means one second, and a negative value leaves the header out.
func WriteError(w http.ResponseWriter, err error, retryAfter time.Duration) {
	writeError(w, err, retryAfterHeader(retryAfter))
}

func writeError(w http.ResponseWriter, err error, retryAfter string) {
	code := StatusCode(err)
	if retryAfter != "" && (code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable) {
		w.Header().Set("Retry-After", retryAfter)
	}
	text := http.StatusText(code)
	if code == http.StatusBadRequest {
		text += ": " + err.Error()
	}
	http.Error(w, text, code)
}

// retryAfterHeader returns the Retry-After value for d, in whole seconds,
// rounded up, at least one. It returns "" for a negative d. It rounds up
// without adding to d, which could overflow near math.MaxInt64.
func retryAfterHeader(d time.Duration) string {
	if d < 0 {
		return ""
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 || s == 0 {
		s++
	}
	return strconv.FormatInt(s, 10)
}
