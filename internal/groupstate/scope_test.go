package groupstate

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/kobe/groupconc/internal/goroutines"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	errShut = errors.New("shut down")
	errRoot = errors.New("root cancelled")
)

// rootFixture is a fixture whose registry's root can be cancelled.
func rootFixture(t *testing.T) (*fixture, context.CancelCauseFunc) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}))
	f.r = NewRegistry(ctx, f.gl, f.r.resolve, f.r.clock)
	t.Cleanup(func() { cancel(nil) })
	return f, cancel
}

func TestScopeMakesNoContextUntilOneIsNeeded(t *testing.T) {
	f, _ := rootFixture(t)
	k, out := f.submit(t, "g", "k")
	require.Equal(t, Admitted, out)
	f.end(t, k)
	g, _ := f.r.Lookup("g")
	s := g.scope.Load()
	assert.Same(t, &g.scope0, s, "the first scope is the group's own")
	assert.NoError(t, k.p.Scope().Err())
	g.Shutdown(errShut, nil)
	assert.ErrorIs(t, k.p.Scope().Err(), context.Canceled)
	assert.Nil(t, s.made.Load(), "Err and a shutdown make no context")
	assert.Nil(t, g.scope.Load().made.Load())

	assert.Equal(t, errShut, context.Cause(k.p.Scope()), "made on first need, with the cause")
	assert.NotNil(t, s.made.Load())
	requireDone(t, k.p.Scope(), "once cancelled")
}

// A scope's cause is the first cancel's: its own (a shutdown, an eviction)
// or its root's (the executor's Close), whenever its context is made.
func TestScopeCauseIsTheFirstCancelWhenItsContextIsMade(t *testing.T) {
	for _, c := range []struct {
		name      string
		rootFirst bool
		made      int // 0: before either cancel, 1: between, 2: after both
	}{
		{"own then root, made before", false, 0},
		{"own then root, made between", false, 1},
		{"own then root, made after", false, 2},
		{"root then own, made before", true, 0},
		{"root then own, made between", true, 1},
		{"root then own, made after", true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, cancelRoot := rootFixture(t)
			k, _ := f.submit(t, "g", "k")
			g, _ := f.r.Lookup("g")
			s := k.p.Scope()
			cancels := []func(){
				func() { g.Shutdown(errShut, nil) },
				func() { cancelRoot(errRoot) },
			}
			want := errShut
			if c.rootFirst {
				cancels[0], cancels[1] = cancels[1], cancels[0]
				want = errRoot
			}
			for i, cancel := range cancels {
				if c.made == i {
					s.Done()
				}
				cancel()
			}
			assert.ErrorIs(t, s.Err(), context.Canceled)
			assert.Equal(t, want, context.Cause(s))
			child, stop := context.WithCancel(s)
			defer stop()
			assert.Equal(t, want, context.Cause(child))
			f.end(t, k)
		})
	}
}

// A context made as the scope is cancelled is cancelled too, whichever of
// the two goes first.
func TestScopeMadeWhileCancelledIsCancelled(t *testing.T) {
	for range 2000 {
		f, cancelRoot := rootFixture(t)
		k, _ := f.submit(t, "g", "k")
		g, _ := f.r.Lookup("g")
		var wg sync.WaitGroup
		wg.Go(func() { k.p.Scope().Done() })
		wg.Go(func() { g.Shutdown(errShut, nil) })
		wg.Wait()
		requireDone(t, k.p.Scope(), "after the shutdown and the making")
		require.Equal(t, errShut, context.Cause(k.p.Scope()))
		f.end(t, k)
		cancelRoot(nil)
	}
}

// The root's cancel reaches a scope whose context is being made.
func TestScopeMadeWhileTheRootIsCancelledIsCancelled(t *testing.T) {
	for range 2000 {
		f, cancelRoot := rootFixture(t)
		k, _ := f.submit(t, "g", "k")
		var wg sync.WaitGroup
		wg.Go(func() { k.p.Scope().Done() })
		wg.Go(func() { cancelRoot(errRoot) })
		wg.Wait()
		require.ErrorIs(t, k.p.Scope().Err(), context.Canceled)
		requireDone(t, k.p.Scope(), "after the root's cancel")
		require.Equal(t, errRoot, context.Cause(k.p.Scope()))
		f.end(t, k)
	}
}

// A context derived from a scope hangs on its made context, as on any
// standard one: it costs no goroutine.
func TestScopeChildrenNeedNoGoroutine(t *testing.T) {
	f, _ := rootFixture(t)
	k, _ := f.submit(t, "g", "k")
	defer f.end(t, k)
	k.p.Scope().Done()
	var child context.Context
	var stop context.CancelCauseFunc
	started, profile := goroutines.StartedBy(func() { child, stop = context.WithCancelCause(k.p.Scope()) })
	defer stop(nil)
	assert.Zero(t, started, "a child context started goroutines:\n%s", profile)
	g, _ := f.r.Lookup("g")
	g.Shutdown(errShut, nil)
	<-child.Done()
	assert.Equal(t, errShut, context.Cause(child))
}

func TestShutdownNeverRevivesAnEvictedGroup(t *testing.T) {
	f, _ := rootFixture(t)
	k, _ := f.submit(t, "g", "k")
	g, _ := f.r.Lookup("g")
	f.r.Evict("g", errShut, nil)
	g.Shutdown(context.Canceled, nil)
	assert.True(t, g.scope.Load().cancelled(), "a shutdown after the eviction")
	assert.Equal(t, errShut, context.Cause(g.Scope()))
	f.end(t, k)

	for range 1000 {
		k, _ := f.submit(t, "h", "k")
		g, _ := f.r.Lookup("h")
		var wg sync.WaitGroup
		wg.Go(func() { g.Shutdown(context.Canceled, nil) })
		wg.Go(func() { f.r.Evict("h", errShut, nil) })
		wg.Wait()
		require.True(t, g.scope.Load().cancelled(), "a shutdown racing the eviction")
		require.Equal(t, errShut, context.Cause(g.Scope()))
		f.end(t, k)
	}
}

func TestGroupsResolvedToEqualLimitsShareThem(t *testing.T) {
	tuning := &struct{}{}
	conc := 1
	f := newFixture(t, Unlimited, false, func(key string) Limits {
		l := Limits{Concurrency: conc, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
		if key == "tuned" {
			l.Tuning = tuning
		}
		return l
	})
	group := func(key string) *Group[tk] {
		k, _ := f.submit(t, key, key)
		f.end(t, k)
		g, _ := f.r.Lookup(key)
		return g
	}
	a, b := group("a"), group("b")
	assert.Same(t, a.limits.Load(), b.limits.Load())
	tuned := group("tuned")
	assert.NotSame(t, a.limits.Load(), tuned.limits.Load(), "limits with tuning are the group's own")
	assert.Same(t, a.limits.Load(), group("c").limits.Load())

	conc = 2
	f.r.Update(Unlimited, Unlimited, f.r.resolve)
	assert.Same(t, a.limits.Load(), b.limits.Load(), "after an update too")
	assert.Equal(t, 2, a.Limits().Concurrency)
}

// requireDone fails the test unless ctx's Done is closed, saying when.
func requireDone(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	select {
	case <-ctx.Done():
	default:
		t.Fatalf("the scope's context is not done %s", when)
	}
}

// A scope's context made by one goroutine is published a moment before
// that goroutine cancels it with the cause it finds. Another that finds
// the cause recorded meanwhile must not hand out the context uncancelled:
// a task ended by its group's Shutdown would read no cause from it.
func TestScopeCauseIsSeenWhileAnotherGoroutineMakesItsContext(t *testing.T) {
	f, _ := rootFixture(t)
	k, _ := f.submit(t, "g", "k")
	defer f.end(t, k)
	s := k.p.scope
	// The window: the context published, not cancelled yet, the cause
	// recorded.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	s.made.Store(&made{ctx: ctx, cancel: cancel})
	cause := errShut
	s.cause.Store(&cause)

	child, stop := context.WithCancelCause(k.p.Scope())
	defer stop(nil)
	assert.Equal(t, errShut, context.Cause(child), "a context derived from the scope")
	requireDone(t, k.p.Scope(), "once its cause is recorded")
	assert.Equal(t, errShut, context.Cause(k.p.Scope()))
}
