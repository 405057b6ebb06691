package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// A request cancelled through its deprecated Cancel channel, which
// http.Transport still honours, ends its wait for a permit as a cancelled
// context does. It is not sent.
func TestClosingRequestCancelEndsTheWait(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	g := newGate()
	srv := serve(t, g)
	c := newClient(t, e, nil)
	first := goGet(t.Context(), c, srv.URL+"/?id=first")
	require.Equal(t, "first", g.waitEntered(t))

	cancel := make(chan struct{})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/?id=second", nil)
	require.NoError(t, err)
	//lint:ignore SA1019 the deprecated field is what is tested.
	req.Cancel = cancel
	errs := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	eventually(t, "the second call waiting", func() bool { return e.Stats().Waiting == 1 })
	close(cancel)
	select {
	case err = <-errs:
	case <-time.After(10 * time.Second):
		g.open(t) // lets the wait end, so the test can
		t.Fatal("hung: closing Request.Cancel did not end the wait")
	}
	var ns *httplimit.NotSentError
	assert.True(t, errors.As(err, &ns), "got %v, want a NotSentError", err)
	assert.ErrorIs(t, err, context.Canceled)
	g.open(t)
	assert.Equal(t, 200, recv(t, first).code)
	assert.Empty(t, g.entered, "the cancelled call was never sent")
	assert.Equal(t, 0, e.Stats().Running, fmt.Sprint("permits held: ", e.Stats()))
}
