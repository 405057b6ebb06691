package httplimit_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// errBodyClosed is what a body's Read returns once the body is closed, as
// net/http's "read on closed response body".
var errBodyClosed = errors.New("read on closed body")

// closedUnderRead is a body whose Read waits until Close, then fails. Its
// Close returns only once the call's task has completed, so that a Read
// woken by the Close ends the task first.
type closedUnderRead struct {
	closed    chan struct{}
	completed <-chan struct{}
}

func (b *closedUnderRead) Read([]byte) (int, error) {
	<-b.closed
	return 0, errBodyClosed
}

func (b *closedUnderRead) Close() error {
	close(b.closed)
	<-b.completed
	return nil
}

// A body closed by its caller while another goroutine reads it, as a
// stream's reader is stopped, ends its call as a close does: SUCCESS, not
// FAILED with the read error that the close itself caused.
func TestABodyClosedUnderAReadEndsItsCallAsACloseDoes(t *testing.T) {
	completed := make(chan struct{})
	results := make(chan groupconc.GroupResult[any], 1)
	e := newExecutor(t, groupconc.NewPolicyBuilder().TaskLifecycleListener(groupconc.ListenerFuncs{
		Completed: func(_, _ string, res groupconc.GroupResult[any]) { results <- res; close(completed) },
	}), nil)
	body := &closedUnderRead{closed: make(chan struct{}), completed: completed}
	tr := &httplimit.Transport{Executor: e, Base: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, ContentLength: -1, Body: body, Request: r}, nil
	})}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://example.com/", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	read := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 8))
		read <- err
	}()
	require.NoError(t, resp.Body.Close())
	assert.ErrorIs(t, <-read, errBodyClosed, "the reader learns of the close")
	res := <-results
	assert.Equal(t, groupconc.StatusSuccess, res.Status, "got %v", res.Err)
	assert.NoError(t, res.Err)
	assert.EqualValues(t, 1, e.Stats().Succeeded)
}
