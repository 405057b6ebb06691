package browsertest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// service is a small multi-tenant service under load, as
// examples/dashboard runs it, with its dashboard mounted under a prefix on
// an httptest server.
type service struct {
	e    *groupconc.GroupExecutor
	h    *httpgc.Handler
	url  string // the dashboard's URL
	srv  *httptest.Server
	stop context.CancelFunc
	wg   sync.WaitGroup
	hang chan struct{} // the stuck tenant's backend answers when closed
}

// newService starts the service; writes are allowed when writes is true
// (Authorize lets everything through: the test server is local). The
// cleanup stops the load, then the server, then the executor.
func newService(t *testing.T, opts httpgc.Options) *service {
	t.Helper()
	s := &service{hang: make(chan struct{})}
	policy, err := groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(48).
		ParentSeparator("/").
		PerGroupMaxConcurrency(map[string]int{"acme": 8, "globex": 6, "initech": 4, "hooli": 3, "umbrella": 4}).
		ConcurrencyResolver(func(key string) int {
			if strings.HasPrefix(key, "team-") {
				return 3
			}
			return 2
		}).
		DefaultQueueThresholdPerGroup(100).
		PerGroupQueueThreshold(map[string]int{"globex": 400}).
		PerGroupMaxInFlight(map[string]int{"acme": 40}).
		PerGroupWeight(map[string]int{"acme": 3, "globex": 2}).
		PressureWarnings(groupconc.PressureConfig{BacklogCount: 100, BacklogAge: 2 * time.Second, Cooldown: 5 * time.Second}, nil). // the handler watches
		Build()
	if err != nil {
		t.Fatal(err)
	}
	s.e = groupconc.New(policy)
	if opts.Interval == 0 {
		opts.Interval = 200 * time.Millisecond
	}
	if s.h, err = httpgc.New(s.e, opts); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/groupconc/", http.StripPrefix("/debug/groupconc", s.h))
	s.srv = httptest.NewServer(mux)
	s.url = s.srv.URL + "/debug/groupconc/"

	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.load(ctx)
	t.Cleanup(func() {
		cancel()
		close(s.hang)
		s.wg.Wait()
		s.h.Close()
		s.srv.Close()
		s.e.Close()
	})
	return s
}

// load starts the traffic: steady requests from many tenants (umbrella's
// from four users, "umbrella/ana" and so on), a burst of
// 250 from globex, and 130 requests to hooli's backend, which hangs: 3
// run, 100 wait (its queue threshold) and 27 are rejected.
func (s *service) load(ctx context.Context) {
	steady := func(key string, every, least, most time.Duration, failRate float64) {
		s.wg.Go(func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				s.submit(ctx, key, n, backend(least+rand.N(most-least), rand.Float64() < failRate))
			}
		})
	}
	steady("acme", 20*time.Millisecond, 40*time.Millisecond, 260*time.Millisecond, 0.01)
	steady("initech", 60*time.Millisecond, 80*time.Millisecond, 320*time.Millisecond, 0.05)
	steady("globex", 150*time.Millisecond, 50*time.Millisecond, 300*time.Millisecond, 0)
	// umbrella's users share its limit of 4. ana's slow requests take about
	// two of it. So the others often wait for umbrella, not for their own.
	steady("umbrella/ana", 800*time.Millisecond, time.Second, 2*time.Second, 0)
	for _, user := range []string{"bo", "cy", "di"} {
		steady("umbrella/"+user, 250*time.Millisecond, 100*time.Millisecond, 300*time.Millisecond, 0)
	}
	for i := 1; i <= 8; i++ {
		steady(fmt.Sprintf("team-%02d", i), time.Duration(150+40*i)*time.Millisecond, 60*time.Millisecond, time.Duration(200+60*i)*time.Millisecond, 0)
	}
	for i := 1; i <= 10; i++ {
		steady(fmt.Sprintf("user-%04d", 37*i%1000), time.Duration(800+50*i)*time.Millisecond, 20*time.Millisecond, 400*time.Millisecond, 0.02)
	}
	for n := range 250 {
		s.submit(ctx, "globex", 1000+n, backend(60*time.Millisecond+rand.N(140*time.Millisecond), false))
	}
	for n := range 130 {
		s.submit(ctx, "hooli", n, func(ctx context.Context) (struct{}, error) {
			select {
			case <-s.hang:
			case <-ctx.Done():
			}
			return struct{}{}, ctx.Err()
		})
	}
}

func (s *service) submit(ctx context.Context, key string, n int, task groupconc.Task[struct{}]) {
	_, _ = groupconc.Submit(ctx, s.e, key, fmt.Sprintf("%s-%d", key, n), task)
}

var errBackend = errors.New("backend: 503")

func backend(d time.Duration, fail bool) groupconc.Task[struct{}] {
	return func(ctx context.Context) (struct{}, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return struct{}{}, ctx.Err()
		case <-t.C:
		}
		if fail {
			return struct{}{}, errBackend
		}
		return struct{}{}, nil
	}
}
