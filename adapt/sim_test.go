package adapt_test

// The simulated backend and the harness that drives a real executor
// against it inside a testing/synctest bubble, where time is fake: a
// minute of load runs in about a second, and exactly the same way each
// time for a seed.
//
// Events of different kinds happen on different nanosecond grids, so that
// no two of them fall on the same fake instant, where the order in which
// goroutines run would be up to the scheduler: arrivals on whole
// microseconds (group g's g×10ns after), deadlines 250ns after them,
// completions 500ns after (one at a time), the trace 100ns after and
// capacity steps 750ns after.

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

const (
	offDeadline   = 250 * time.Nanosecond
	offCompletion = 500 * time.Nanosecond
	offTrace      = 100 * time.Nanosecond
	offStep       = 750 * time.Nanosecond
	offGroup      = 10 * time.Nanosecond // between groups, for up to 10 groups
)

// onGrid returns the first instant at or after d that is off past a whole
// microsecond.
func onGrid(d, off time.Duration) time.Duration {
	g := d.Truncate(time.Microsecond) + off
	if g < d {
		g += time.Microsecond
	}
	return g
}

// scenario is a load on a backend: its capacity over time and the groups
// sending it Poisson arrivals of log-normal work with a deadline each. The
// backend shares its cores among its tasks (processor sharing), unless
// fcfs is set.
type scenario struct {
	name     string
	duration time.Duration
	steps    []step    // capacity from each step's time on; the first at 0
	rates    []float64 // arrivals per second, one group each
	service  time.Duration
	sigma    float64 // of the log of the work
	deadline time.Duration
	seed     uint64
	phases   []phase // the spans results are reported for

	fcfs     bool // a line in front of servers, not processor sharing
	erlang   int  // > 0: the work is Erlang of this shape, not log-normal
	calls    calls
	backends []int // the backend of each group; nil: all call backend 0
	// load, if set, scales the rates from each of its times on.
	load []step
}

// calls is what a task does at its deadline.
type calls int

const (
	callsAbort   calls = iota // it returns, and its work is taken out of the backend
	callsWait                 // it has no deadline: it waits for its call
	callsAbandon              // it returns, and the backend serves its call anyway
)

// step is a capacity from a time on (cores or servers), of backend 0
// unless backend says otherwise; or, in scenario.load, a scale of the
// rates.
type step struct {
	at      time.Duration
	cores   float64
	backend int
}

// server is a simulated backend.
type server interface {
	task(work float64) groupconc.Task[struct{}]
	setCores(c float64)
	capacity() float64
	spent() float64 // core- or server-nanoseconds
	close()
}

type phase struct {
	name       string
	start, end time.Duration
	settle     time.Duration // from start: measures of steady state begin here
}

// setup is how an executor runs the scenario: a policy, and which limit
// the trace follows.
type setup struct {
	name   string
	build  func(*groupconc.PolicyBuilder) *groupconc.PolicyBuilder
	global bool // the trace follows the global cap, not group 0's limit
}

// record is one task as the run saw it; times from the scenario's start.
type record struct {
	group            int
	submitted, ended time.Duration
	started          time.Duration
	status           groupconc.TaskStatus
}

// tick is the state at one point of the trace.
type tick struct {
	at                      time.Duration
	limit, running, waiting int
	cores                   float64
	groups                  []int // each group's limit, if the trace follows the global cap
}

// outcome is what one run of a scenario under a setup produced.
type outcome struct {
	records []record
	trace   []tick
	hash    uint64
	changes int // limit changes told
	busy    float64
	late    time.Duration // > 0: a success after it, from Submit, is no good
}

// traceEvery is the trace's period, and the windows' of the algorithms.
const traceEvery = 100 * time.Millisecond

// simulate runs sc under su in a bubble and returns what happened.
func simulate(t *testing.T, sc scenario, su setup) outcome {
	var out outcome
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		bes := newServers(sc, epoch)
		var (
			mu      sync.Mutex
			records []record
		)
		keep := func(key string, r groupconc.GroupResult[any]) {
			g, _ := strconv.Atoi(key[1:])
			mu.Lock()
			records = append(records, record{
				group:     g,
				submitted: r.Submitted.Sub(epoch),
				started:   r.Start.Sub(epoch),
				ended:     r.End.Sub(epoch),
				status:    r.Status,
			})
			mu.Unlock()
		}
		changes := 0
		b := su.build(groupconc.NewPolicyBuilder()).
			TaskLifecycleListener(groupconc.ListenerFuncs{
				Completed: func(key, _ string, r groupconc.GroupResult[any]) { keep(key, r) },
				Rejected: func(key, _, _ string) {
					now := time.Now()
					keep(key, groupconc.GroupResult[any]{Status: groupconc.StatusRejected, Submitted: now, Start: now, End: now})
				},
			}).
			LimitChanges(func(groupconc.LimitChange) { mu.Lock(); changes++; mu.Unlock() })
		p, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		e := groupconc.New(p)

		var wg sync.WaitGroup
		for _, s := range sc.steps {
			if s.at == 0 {
				continue
			}
			wg.Go(func() {
				time.Sleep(onGrid(s.at, offStep) - time.Since(epoch))
				bes[s.backend].setCores(s.cores)
			})
		}
		wg.Go(func() { out.trace = traceRun(e, bes[0], sc, su, epoch) })
		for g := range sc.rates {
			be := bes[0]
			if sc.backends != nil {
				be = bes[sc.backends[g]]
			}
			wg.Go(func() { arrive(e, be, sc, g, epoch) })
		}
		wg.Wait()
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, be := range bes {
			be.close()
			out.busy += be.spent()
		}
		if sc.calls == callsWait {
			out.late = sc.deadline
		}
		slices.SortFunc(records, func(a, b record) int { return int(a.submitted - b.submitted) })
		out.records, out.changes = records, changes
	})
	h := fnv.New64a()
	for _, k := range out.trace {
		for _, v := range [...]int64{int64(k.at), int64(k.limit), int64(k.running), int64(k.waiting)} {
			var b [8]byte
			for i := range b {
				b[i] = byte(v >> (8 * i))
			}
			h.Write(b[:])
		}
	}
	out.hash = h.Sum64()
	return out
}

// newServers returns the scenario's backends, at their capacity at 0.
func newServers(sc scenario, epoch time.Time) []server {
	n := 1
	for _, b := range sc.backends {
		n = max(n, b+1)
	}
	bes := make([]server, n)
	for _, s := range sc.steps {
		if s.at != 0 {
			continue
		}
		if sc.fcfs {
			bes[s.backend] = newFCFS(s.cores, sc.calls == callsAbandon, epoch)
		} else {
			bes[s.backend] = newBackend(s.cores, epoch)
		}
	}
	return bes
}

// rateAt returns group g's arrival rate at at.
func (sc scenario) rateAt(g int, at time.Duration) float64 {
	r := sc.rates[g]
	for _, l := range sc.load {
		if l.at <= at {
			r = sc.rates[g] * l.cores
		}
	}
	return r
}

// arrive submits group g's tasks, Poisson at its rate per second, until
// the scenario's end.
func arrive(e *groupconc.GroupExecutor, be server, sc scenario, g int, epoch time.Time) {
	rng := rand.New(rand.NewPCG(sc.seed, uint64(g)))
	mu := math.Log(float64(sc.service)) - sc.sigma*sc.sigma/2 // so the mean is service
	key := "g" + strconv.Itoa(g)
	lane := time.Duration(g) * offGroup // no two groups' arrivals at one instant
	at := time.Duration(0)
	for i := 0; ; i++ {
		at += time.Duration(rng.ExpFloat64() / sc.rateAt(g, at) * float64(time.Second))
		next := onGrid(at, lane)
		if next >= sc.duration {
			return
		}
		var work float64
		if sc.erlang > 0 {
			for range sc.erlang {
				work += rng.ExpFloat64()
			}
			work *= float64(sc.service) / float64(sc.erlang)
		} else {
			work = math.Exp(mu + sc.sigma*rng.NormFloat64())
		}
		time.Sleep(next - time.Since(epoch))
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if sc.calls != callsWait {
			ctx, cancel = context.WithDeadline(ctx, epoch.Add(onGrid(next+sc.deadline, offDeadline+lane)))
		}
		task := be.task(work)
		_, err := groupconc.Submit(ctx, e, key, strconv.Itoa(i), func(ctx context.Context) (struct{}, error) {
			defer cancel()
			return task(ctx)
		})
		if err != nil {
			panic(err)
		}
	}
}

// traceRun samples the limit the setup follows, with the running and
// waiting counts, every traceEvery until the scenario's end. Nothing else
// happens at a sampling instant (see onGrid), so what it reads is still.
func traceRun(e *groupconc.GroupExecutor, be server, sc scenario, su setup, epoch time.Time) []tick {
	var ticks []tick
	for at := traceEvery; at < sc.duration; at += traceEvery {
		time.Sleep(onGrid(at, offTrace) - time.Since(epoch))
		k := tick{at: at}
		if su.global {
			s := e.Stats()
			k.limit, k.running, k.waiting = s.GlobalMaxInFlight, s.Running, s.Waiting
			for g := range sc.rates {
				gs, _ := e.GroupStats("g" + strconv.Itoa(g))
				k.groups = append(k.groups, gs.MaxConcurrency)
			}
		} else if s, ok := e.GroupStats("g0"); ok {
			k.limit, k.running, k.waiting = s.MaxConcurrency, s.Running, s.Waiting
		}
		k.cores = be.capacity()
		ticks = append(ticks, k)
	}
	return ticks
}
