package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/kobe/groupconc"
)

// Transport is an http.RoundTripper that limits outgoing requests by group,
// through groupconc.Do on an executor. By default a request's group is its
// host and port, so the executor's per-group limits read "at most N calls
// at once to a host".
//
// A request holds its permits from when it is sent until its response body
// is closed or read to io.EOF, like a connection. So the limit counts the
// calls whose answers are still being read. A response whose body is never
// closed keeps its permits, as it keeps its connection. A failed round trip,
// and a response that has no body to read (http.NoBody, a Content-Length
// of 0, an answer to HEAD), give them back at once.
//
// A request that waits for its permits is not sent yet. Its context bounds
// the wait. Then it is sent with a context that derives from its own and
// is the task's. So ShutdownGroup, EvictGroup and Close of the executor
// cancel it, as they cancel a task. The response's Request has the
// request's own context, not the task's. It is the request itself, or a
// copy of Base's own. So a call made from that context takes permits of
// its own. A request that is not sent gets a *NotSentError, and its body
// is closed. A redirect that http.Client follows gets an error of its own
// then (see NotSentError).
//
// A request whose context derives from a task of the same executor, such
// as one made by a handler under Handler, runs under that task's permits
// and takes none of its own, as groupconc.Do does. So use an executor of
// its own for the Transport when a server's handlers call out.
//
// Its zero value is not usable. Set Executor. Once its fields are set, it
// is safe for concurrent use. Each request has one goroutine of the
// Transport, from RoundTrip until its permits are back. It runs Do, and
// holds the permits while the body is read. It ends when RoundTrip
// returns an error, when the body is closed or read to io.EOF, or when
// the request's task context ends. A request with a Cancel channel (it is
// deprecated) has one more until then, which watches it. Closing it ends
// the wait for permits, as ending the context does.
type Transport struct {
	// Base sends the requests. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// Executor holds the limits. With none, RoundTrip sends nothing and
	// returns an error that says so.
	Executor *groupconc.GroupExecutor
	// Key returns the group key of a request. Nil means HostKey. A
	// request whose key is "" is not sent, with ErrNoKey, or with
	// ErrHostNotASCII if Key is nil and the host is not all ASCII.
	Key func(*http.Request) string
	// Priority returns the priority of a request. Nil means Submit.Priority.
	Priority func(*http.Request) groupconc.Priority
	// Cost returns the permits a request takes. Nil means Submit.Cost.
	Cost func(*http.Request) int
	// Submit holds the options every request is submitted with.
	Submit groupconc.SubmitOptions
}

// NotSentError is the error of a request that Transport did not send. The
// request never left the process, so it is safe to retry even when it is
// not idempotent. A redirect that http.Client follows is not that request.
// The request was sent, and got the redirect. A redirect not sent fails
// with an error that wraps the same Err. It is not a *NotSentError. An
// http.Client wraps it in a *url.Error, and errors.As and errors.Is see
// through both. An http.Client whose Timeout ends the wait may replace it
// with an error of its own, which unwraps to nothing but
// context.DeadlineExceeded. Bound the wait with the request's context to
// keep it.
type NotSentError struct {
	Key string // the request's group key
	// Err says why. It is a *groupconc.RejectedError (so errors.Is matches
	// groupconc.ErrRejected), the request context's error
	// (context.Canceled once its Cancel channel is closed),
	// groupconc.ErrClosed, ErrGroupShutdown, ErrGroupEvicted, ErrNoKey,
	// ErrHostNotASCII or an error wrapping groupconc.ErrInvalidTask. If a
	// callback of the executor (a listener, a RejectionHandler, a pressure
	// func) called runtime.Goexit on the goroutine that waits for the
	// permits, it is an error that says so.
	Err error
}

// Error names the request's group and why the request was not sent.
func (e *NotSentError) Error() string {
	return fmt.Sprintf("httplimit: request of group %q not sent: %v", e.Key, e.Err)
}

// Unwrap returns Err.
func (e *NotSentError) Unwrap() error { return e.Err }

// errNoExecutor is the error of every request of a Transport whose
// Executor is nil. A nil executor would act as one closed.
var errNoExecutor = errors.New("httplimit: Transport.Executor is nil")

// errNoResponse stands for a request a RejectionHandler turned away
// without a response to return in its place.
var errNoResponse = errors.New("httplimit: turned away, with no response to return")

// RoundTrip waits for the permits of req's group, then sends req through
// Base. It returns Base's response, whose body gives the permits back once
// closed or read to io.EOF. The wait ends when the permits are held, when
// the group turns req away, or when req's context ends. In the last two
// cases it returns a *NotSentError, as it does if a callback of the
// executor calls runtime.Goexit on the goroutine that waits. A redirect
// that http.Client follows gets an error that wraps the same cause. It is
// not a *NotSentError, since the first request was sent. A
// RejectionHandler of the executor may return a *http.Response. It is
// then returned in place of Base's.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Executor == nil {
		closeBody(req)
		return nil, errNoExecutor
	}
	key, err := "", error(ErrNoKey)
	if t.Key == nil {
		key, err = hostKey(req)
	} else {
		key = t.Key(req)
	}
	if key == "" {
		return nil, notSent(req, key, err)
	}
	o := t.Submit
	if t.Priority != nil {
		o.Priority = t.Priority(req)
	}
	if t.Cost != nil {
		o.Cost = t.Cost(req)
	}
	c := newCall()
	ctx := req.Context()
	//lint:ignore SA1019 http.Transport still honours Cancel, so the wait must too.
	if cancel := req.Cancel; cancel != nil {
		ctx = legacyCancel(ctx, cancel, c.finished)
	}
	go c.hold(ctx, t.Executor, key, o)
	select {
	case ctx = <-c.held:
	case r := <-c.refused:
		<-c.finished
		switch {
		case r.err != nil:
			return nil, notSent(req, key, r.err)
		case r.resp == nil:
			return nil, notSent(req, key, errNoResponse)
		}
		closeBody(req)
		return r.resp, nil
	}
	// The permits are held. Every way out of here gives them back once. A
	// failed round trip and a panic do at once, a response through its body.
	handed := false
	defer func() {
		if !handed {
			c.release(errPanicked)
		}
	}()
	out := req
	if ctx != req.Context() {
		out = req.WithContext(ctx)
	}
	resp, err := t.base().RoundTrip(out)
	if err == nil && resp == nil {
		err = errors.New("httplimit: the base RoundTripper returned no response and no error")
	}
	handed = true
	if err != nil {
		c.release(err)
		return nil, err
	}
	// The response names the caller's request, as http.Transport names its
	// caller's. The copy sent carries the task's context. A follow-up made
	// with it would run inside the task, and take no permit of its own. A
	// Base that sent a copy of its own, such as one that adds a span to
	// the context, keeps its copy, with req's context.
	switch {
	case resp.Request == out:
		resp.Request = req
	case resp.Request != nil && resp.Request != req:
		resp.Request = resp.Request.WithContext(req.Context())
	}
	if noBody(req, resp) {
		c.release(nil)
		return resp, nil
	}
	resp.Body = c.body(resp.Body)
	return resp, nil
}

// CloseIdleConnections closes the idle connections of Base, if it has a
// CloseIdleConnections method. So http.Client.CloseIdleConnections reaches
// them.
func (t *Transport) CloseIdleConnections() {
	if b, ok := t.base().(interface{ CloseIdleConnections() }); ok {
		b.CloseIdleConnections()
	}
}

// legacyCancel returns a context that ends with ctx, or once cancel, a
// request's deprecated Cancel channel, is closed. http.Transport still
// honours that channel, so it must end the wait for permits too. The
// goroutine that watches it ends once the call's Do returned (finished).
func legacyCancel(ctx context.Context, cancel <-chan struct{}, finished <-chan struct{}) context.Context {
	ctx, stop := context.WithCancel(ctx)
	go func() {
		defer stop()
		select {
		case <-cancel:
		case <-finished:
		}
	}()
	return ctx
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// noBody reports whether resp, the answer to req, has no body to read.
// HTTP/2 gives such answers a body of its own, not http.NoBody. After 101
// Switching Protocols the body is the connection itself, though
// net/http sets its ContentLength to 0. That body holds the permits until
// closed.
func noBody(req *http.Request, resp *http.Response) bool {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.Body == nil
	}
	return resp.Body == nil || resp.Body == http.NoBody ||
		resp.ContentLength == 0 || req.Method == http.MethodHead
}

// notSent closes req's body and returns why req was not sent. A redirect
// that http.Client follows carries the response that caused it. So the
// caller's request was sent, and is not safe to retry. Its error is then
// not a *NotSentError.
func notSent(req *http.Request, key string, err error) error {
	closeBody(req)
	if req.Response != nil {
		return &redirectNotSentError{key: key, err: err}
	}
	return &NotSentError{Key: key, Err: err}
}

// redirectNotSentError is the error of a redirect that Transport did not
// send, after the request it follows was sent.
type redirectNotSentError struct {
	key string
	err error
}

func (e *redirectNotSentError) Error() string {
	return fmt.Sprintf("httplimit: redirect of a request already sent, to group %q, not sent: %v", e.key, e.err)
}

func (e *redirectNotSentError) Unwrap() error { return e.err }

// closeBody closes the body of a request that is not sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
