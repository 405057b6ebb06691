package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

// tenant is one source of steady traffic.
type tenant struct {
	key      string
	every    time.Duration // one request per every
	min, max time.Duration // how long the backend takes for one
	failRate float64       // the share of requests that fail
	stuck    bool          // the backend never answers: tasks end only when cancelled
}

func tenants() []tenant {
	ts := []tenant{
		{key: "acme", every: 20 * time.Millisecond, min: 40 * time.Millisecond, max: 260 * time.Millisecond, failRate: 0.01},
		{key: "globex", every: 120 * time.Millisecond, min: 50 * time.Millisecond, max: 300 * time.Millisecond},
		{key: "initech", every: 60 * time.Millisecond, min: 80 * time.Millisecond, max: 320 * time.Millisecond, failRate: 0.05},
		{key: "hooli", every: 400 * time.Millisecond, stuck: true},
	}
	// umbrella's users share its limit of 4. ana's slow requests take about
	// two of it. So the others often wait for umbrella, not for their own.
	ts = append(ts, tenant{key: "umbrella/ana", every: 800 * time.Millisecond, min: time.Second, max: 2 * time.Second})
	for _, user := range []string{"bo", "cy", "di"} {
		ts = append(ts, tenant{key: "umbrella/" + user, every: 250 * time.Millisecond, min: 100 * time.Millisecond, max: 300 * time.Millisecond})
	}
	for i := 1; i <= 8; i++ {
		ts = append(ts, tenant{key: fmt.Sprintf("team-%02d", i), every: time.Duration(150+40*i) * time.Millisecond,
			min: 60 * time.Millisecond, max: time.Duration(200+60*i) * time.Millisecond})
	}
	for i := 1; i <= 40; i++ {
		ts = append(ts, tenant{key: fmt.Sprintf("user-%04d", 37*i%1000), every: time.Duration(800+50*i) * time.Millisecond,
			min: 20 * time.Millisecond, max: 400 * time.Millisecond, failRate: 0.02})
	}
	return ts
}

// startLoad submits the traffic until ctx ends. That is every tenant's
// steady requests, and a burst of 300 from globex every 20 seconds. The channel it
// returns is closed when every submitter has returned.
func startLoad(ctx context.Context, e *groupconc.GroupExecutor) <-chan struct{} {
	var wg sync.WaitGroup
	for _, t := range tenants() {
		wg.Go(func() { steady(ctx, e, t) })
	}
	wg.Go(func() { bursts(ctx, e) })
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

func steady(ctx context.Context, e *groupconc.GroupExecutor, t tenant) {
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		task := backend(t.min, t.max, t.failRate)
		if t.stuck {
			task = hang
		}
		if _, err := groupconc.Submit(ctx, e, t.key, fmt.Sprintf("%s-%d", t.key, n), task); err != nil {
			return // closed
		}
	}
}

func bursts(ctx context.Context, e *groupconc.GroupExecutor) {
	next := time.NewTimer(3 * time.Second)
	defer next.Stop()
	for round := 1; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		}
		for i := 1; i <= 300; i++ {
			id := fmt.Sprintf("globex-burst-%d-%d", round, i)
			if _, err := groupconc.Submit(ctx, e, "globex", id, backend(100*time.Millisecond, 300*time.Millisecond, 0)); err != nil {
				return
			}
		}
		next.Reset(20 * time.Second)
	}
}

var errBackend = errors.New("backend: 503")

// backend is a request that takes between min and max, and fails at
// failRate.
func backend(min, max time.Duration, failRate float64) groupconc.Task[struct{}] {
	d := min + rand.N(max-min+1)
	fail := rand.Float64() < failRate
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

// hang is a request to a backend that never answers.
func hang(ctx context.Context) (struct{}, error) {
	<-ctx.Done()
	return struct{}{}, ctx.Err()
}
