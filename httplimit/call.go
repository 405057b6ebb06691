package httplimit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc"
)

// errPanicked is the task's error when the base RoundTripper panicked. The
// panic itself goes on up the caller's goroutine.
var errPanicked = errors.New("httplimit: the base RoundTripper panicked")

// errBodyUnwound is the task's error when a response body's Read did not
// return (a panic, runtime.Goexit).
var errBodyUnwound = errors.New("httplimit: the response body's Read did not return")

// errCallbackExited is why a request is not sent when a callback of the
// executor (a listener, a RejectionHandler, a pressure func) called
// runtime.Goexit on the goroutine that waits for the request's permits.
var errCallbackExited = errors.New("httplimit: a callback of the executor called runtime.Goexit before the request was sent")

// call is one request's hold on its permits. Do cannot lend its permits
// past the return of its function, and the caller must return the
// response before its body is read. So Do runs on a goroutine of its own,
// whose function hands the caller the task's context and then waits for
// the body to be done with.
type call struct {
	held     chan context.Context // the task's context, once the permits are held
	refused  chan refusal         // what Do returned without running its function
	done     chan error           // the request's end, reported as the task's error
	finished chan struct{}        // closed once Do returned, so the permits are back
	once     sync.Once
}

// refusal is what Do returned for a request it did not run.
type refusal struct {
	resp *http.Response
	err  error
}

func newCall() *call {
	return &call{
		held:     make(chan context.Context),
		refused:  make(chan refusal, 1),
		done:     make(chan error, 1),
		finished: make(chan struct{}),
	}
}

// hold runs Do for the request. Its function holds the permits until
// release, or until the task's context ends. Then the body is of no use,
// since the request's context derives from it. It sends on held or on
// refused, even if a callback of the executor ends its goroutine before
// the function runs.
func (c *call) hold(ctx context.Context, e *groupconc.GroupExecutor, key string, o groupconc.SubmitOptions) {
	defer close(c.finished)
	ran, returned := false, false
	defer func() {
		if !ran && !returned {
			c.refused <- refusal{err: errCallbackExited}
		}
	}()
	resp, err := groupconc.Do(ctx, e, key, func(ctx context.Context) (*http.Response, error) {
		ran = true
		c.held <- ctx
		select {
		case err := <-c.done:
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, o)
	returned = true
	if !ran {
		c.refused <- refusal{resp, err}
	}
}

// release ends the request, with err as its task's error, and returns once
// the permits are back. Only the first call counts.
func (c *call) release(err error) {
	c.once.Do(func() { c.done <- err })
	<-c.finished
}

// body wraps a response body so that closing it, or reading it to the
// end, releases the call. A body that can be written to, as after 101
// Switching Protocols, stays one.
func (c *call) body(rc io.ReadCloser) io.ReadCloser {
	b := &heldBody{rc: rc, c: c}
	if w, ok := rc.(io.Writer); ok {
		return &heldRWBody{b, w}
	}
	return b
}

// heldBody is a response body that holds its request's permits.
type heldBody struct {
	rc     io.ReadCloser
	c      *call
	closed atomic.Bool // Close has begun
}

// Read gives the permits back at the body's end or error, and if the
// body's Read does not return (a panic, runtime.Goexit). An error once
// Close has begun is most likely of the Close, which ends the call as a
// success. It does not fail the task.
func (b *heldBody) Read(p []byte) (n int, err error) {
	returned := false
	defer func() {
		switch {
		case !returned:
			b.c.release(errBodyUnwound)
		case err == io.EOF:
			b.c.release(nil)
		case err != nil && b.closed.Load():
			b.c.release(nil)
		case err != nil:
			b.c.release(err)
		}
	}()
	n, err = b.rc.Read(p)
	returned = true
	return n, err
}

// Close closes the body first, so the connection is done with before
// another request may take the permits. They come back even if the
// body's Close does not return.
func (b *heldBody) Close() error {
	b.closed.Store(true)
	defer b.c.release(nil)
	return b.rc.Close()
}

// heldRWBody is a heldBody that can be written to.
type heldRWBody struct {
	*heldBody
	w io.Writer
}

func (b *heldRWBody) Write(p []byte) (int, error) { return b.w.Write(p) }
