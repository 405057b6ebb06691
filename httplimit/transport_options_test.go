package httplimit_test

import (
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// roundTripperFunc sends a request by calling itself.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The Transport's Priority and Cost reach the task. It runs in a synctest
// bubble, with a Base that sends nothing (see startOrder).
func TestTheTransportsPriorityAndCostReachTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2), nil)
		g := newGate()
		c := &http.Client{Transport: &httplimit.Transport{
			Executor: e,
			Base: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				g.pass(r.Context(), r.Header.Get("X-Priority"))
				return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
			}),
			Priority: headerPriority,
			Cost:     func(*http.Request) int { return 2 }, // each call takes both permits
		}}
		done := make(chan error, 4)
		order := startOrder(t, g, func(id string) {
			go func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://example.com/", nil)
				req.Header.Set("X-Priority", id)
				resp, err := c.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
		}, func() {
			st, _ := e.GroupStats("example.com:80")
			assert.Equal(t, 2, st.RunningCost, "Cost 2")
			assert.Equal(t, 3, st.Waiting)
		})
		assert.Equal(t, []string{"high", "", "low"}, order, "the start order follows Priority")
		for range 4 {
			assert.NoError(t, <-done)
		}
	})
}

// The Transport's Submit options reach the task: with Block and MaxWait a
// request waits for a queue slot and is turned away when MaxWait passes,
// where without them it would be turned away at once.
func TestTheTransportsSubmitOptionsReachTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
		release := make(chan struct{})
		c := &http.Client{Transport: &httplimit.Transport{
			Executor: e,
			Base: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				<-release
				return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
			}),
			Submit: groupconc.SubmitOptions{Block: true, MaxWait: time.Second},
		}}
		first := make(chan error, 1)
		go func() {
			resp, err := c.Get("http://example.com/first")
			if err == nil {
				resp.Body.Close()
			}
			first <- err
		}()
		synctest.Wait()

		start := time.Now()
		_, err := c.Get("http://example.com/second")
		var re *groupconc.RejectedError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, groupconc.ReasonWaitTimeout, re.Reason)
		assert.Equal(t, time.Second, time.Since(start), "it waited MaxWait")
		close(release)
		assert.NoError(t, <-first)
	})
}

// closer is a Base that counts its CloseIdleConnections calls.
type closer struct {
	http.RoundTripper
	closed int
}

func (c *closer) CloseIdleConnections() { c.closed++ }

func TestTheTransportPassesCloseIdleConnectionsOnAndRefusesANilResponse(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	base := &closer{RoundTripper: roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}
	c := &http.Client{Transport: &httplimit.Transport{Executor: e, Base: base}}
	c.CloseIdleConnections()
	assert.Equal(t, 1, base.closed, "http.Client.CloseIdleConnections reaches Base")

	_, err := c.Get("http://example.com/")
	require.Error(t, err, "a Base that returns no response and no error")
	assert.Contains(t, err.Error(), "no response and no error")
	st, _ := e.GroupStats("example.com:80")
	assert.Equal(t, 0, st.Running, "the permit is back")
	assert.EqualValues(t, 1, st.Failed)
}

func TestAFailedRoundTripReturnsBasesErrorAndGivesThePermitBack(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	refused := errors.New("connection refused")
	c := &http.Client{Transport: &httplimit.Transport{Executor: e, Base: roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return nil, refused
	})}}
	_, err := c.Get("http://example.com/")
	require.ErrorIs(t, err, refused)
	var ns *httplimit.NotSentError
	assert.False(t, errors.As(err, &ns), "it was sent")
	st, _ := e.GroupStats("example.com:80")
	assert.Equal(t, 0, st.Running)
	assert.EqualValues(t, 1, st.Failed)
}
