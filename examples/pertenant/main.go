// Command pertenant shows a limit per tenant over a limit per user. Group
// keys are "tenant/user", and ParentSeparator("/") makes each tenant the
// parent of its users. A tenant runs at most 4 permits' worth of tasks, a
// user at most 2. A heavy export costs 4 permits, so it takes its whole
// tenant while it runs.
//
// Every task adds what it holds to a gauge of its tenant and of its user.
// So the program measures what ran at once. It prints the peaks, the
// export's start and the tenant's GroupStats. It exits non-zero if a limit
// was passed. It does too if the export did not run alone in its tenant.
//
//	go run ./examples/pertenant
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc"
)

const (
	tenantLimit = 4
	userLimit   = 2
	exportCost  = 4
)

func main() {
	policy, err := groupconc.NewPolicyBuilder().
		ParentSeparator("/"). // "acme/alice" has parent "acme"
		PerGroupMaxConcurrency(map[string]int{"acme": tenantLimit, "globex": tenantLimit}).
		DefaultMaxConcurrencyPerGroup(userLimit). // every user
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	r := &run{e: e, gauges: map[string]*gauge{}, started: make(chan string, 64)}

	fmt.Printf("Each tenant runs at most %d permits at once, each user at most %d.\n\n", tenantLimit, userLimit)
	r.users()
	r.export()

	fmt.Println("\nMost permits held at once, measured by the tasks:")
	ok := true
	for _, key := range []string{"acme", "acme/alice", "acme/bob", "acme/carol", "globex", "globex/dave"} {
		limit := userLimit
		if !strings.Contains(key, "/") {
			limit = tenantLimit
		}
		most := r.gauge(key).most.Load()
		fmt.Printf("  %-12s %d (limit %d)\n", key, most, limit)
		ok = ok && most <= int64(limit)
	}
	if !ok || !r.alone {
		fmt.Println("FAIL: a limit was passed, or the export did not run alone in acme")
		os.Exit(1)
	}
}

// users runs three tasks for each of acme's three users and for globex's
// one user. Each user's tasks wait at the user's gate. So each snapshot
// shows what runs at once, and the gauges reach every limit.
func (r *run) users() {
	fmt.Println("1. Three tasks each for alice, bob and carol of acme, and dave of globex")
	gates := map[string]chan struct{}{}
	var hs []*groupconc.TaskHandle[struct{}]
	for _, user := range []string{"acme/alice", "acme/bob", "acme/carol", "globex/dave"} {
		gates[user] = make(chan struct{})
		for i := 1; i <= 3; i++ {
			_, name, _ := strings.Cut(user, "/")
			hs = append(hs, r.submit(user, fmt.Sprintf("%s-%d", name, i), 1, gates[user]))
		}
	}
	r.await(tenantLimit+userLimit, "") // acme is full at 4, globex at dave's 2
	r.print("acme")
	r.print("acme/alice")
	r.print("globex")
	fmt.Println("   alice's, bob's and dave's end; carol's start, up to her own limit")
	for _, user := range []string{"acme/alice", "acme/bob", "globex/dave"} {
		close(gates[user])
	}
	wait(slices.DeleteFunc(slices.Clone(hs), func(h *groupconc.TaskHandle[struct{}]) bool {
		return strings.HasPrefix(h.TaskID(), "carol")
	}))
	r.await(userLimit, "carol")
	r.print("acme")
	r.print("acme/carol")
	close(gates["acme/carol"])
	wait(hs)
	r.drain()
}

// export submits two tasks of bob, alice's export of cost 4, then two of
// carol. Bob's hold 2 of acme's 4 permits, so the export waits. Carol's
// tasks wait behind it, since nothing overtakes it.
func (r *run) export() {
	fmt.Printf("\n2. Bob runs two tasks; then alice's export (cost %d) and carol's two tasks arrive\n", exportCost)
	gate := make(chan struct{})
	var hs []*groupconc.TaskHandle[struct{}]
	hs = append(hs, r.submit("acme/bob", "bob-1", 1, gate), r.submit("acme/bob", "bob-2", 1, gate))
	r.await(2, "")
	hs = append(hs, r.submit("acme/alice", "export", exportCost, gate))
	hs = append(hs, r.submit("acme/carol", "carol-1", 1, gate), r.submit("acme/carol", "carol-2", 1, gate))
	r.print("acme")
	close(gate)
	wait(hs)
	first := <-r.started
	r.got++
	r.drain()
	r.alone = r.alone && first == "export"
	fmt.Printf("   when bob's end, the export starts first and alone:\n%s", r.during)
	fmt.Println("   then carol's two tasks, which waited behind it")
}

// await receives start reports until n tasks whose ID starts with prefix
// have started.
func (r *run) await(n int, prefix string) {
	for n > 0 {
		r.got++
		if strings.HasPrefix(<-r.started, prefix) {
			n--
		}
	}
}

// drain receives the start reports of every task submitted so far. Call it
// once they have all ended.
func (r *run) drain() {
	for ; r.got < r.submitted; r.got++ {
		<-r.started
	}
}

// run holds the executor and what the tasks measure.
type run struct {
	e       *groupconc.GroupExecutor
	mu      sync.Mutex
	gauges  map[string]*gauge // guarded by mu
	started chan string       // each task's ID, as it starts
	during  string            // the export's view of acme, written by the export
	alone   bool              // whether the export ran alone in acme

	submitted, got int // tasks submitted, and start reports received
}

// submit submits a task of cost c to key. It adds what it holds to its
// user's and its tenant's gauges, reports its start and waits at gate.
func (r *run) submit(key, id string, c int, gate chan struct{}) *groupconc.TaskHandle[struct{}] {
	tenant, _, _ := strings.Cut(key, "/")
	user, ten := r.gauge(key), r.gauge(tenant)
	task := func(ctx context.Context) (struct{}, error) {
		// A cost above a limit takes the whole limit there.
		u, t := min(c, userLimit), min(c, tenantLimit)
		user.add(u)
		ten.add(t)
		defer user.add(-u)
		defer ten.add(-t)
		if id == "export" {
			r.during = r.line("acme") + r.line("acme/alice")
			r.alone = ten.cur.Load() == tenantLimit && r.stats("acme").Running == 1
		}
		r.started <- id
		<-gate
		return struct{}{}, nil
	}
	h, err := groupconc.SubmitWith(context.Background(), r.e, key, id, task, groupconc.SubmitOptions{Cost: c})
	if err != nil {
		log.Fatal(err)
	}
	r.submitted++
	return h
}

func (r *run) stats(key string) groupconc.GroupStats {
	st, _ := r.e.GroupStats(key)
	return st
}

// line formats the counts of key's GroupStats.
func (r *run) line(key string) string {
	st := r.stats(key)
	return fmt.Sprintf("   GroupStats(%-12q) Running %d, Waiting %d, RunningCost %d\n",
		key, st.Running, st.Waiting, st.RunningCost)
}

func (r *run) print(key string) { fmt.Print(r.line(key)) }

func (r *run) gauge(key string) *gauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.gauges[key]
	if g == nil {
		g = &gauge{}
		r.gauges[key] = g
	}
	return g
}

func wait(hs []*groupconc.TaskHandle[struct{}]) {
	for _, h := range hs {
		if res := h.Wait(); res.Status != groupconc.StatusSuccess {
			log.Fatalf("%s: %v %v", res.TaskID, res.Status, res.Err)
		}
	}
}

// gauge counts the permits a group's running tasks hold, and the most held
// at once.
type gauge struct{ cur, most atomic.Int64 }

func (g *gauge) add(n int) {
	v := g.cur.Add(int64(n))
	for m := g.most.Load(); v > m && !g.most.CompareAndSwap(m, v); m = g.most.Load() {
	}
}
