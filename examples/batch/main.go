// Command batch runs a nightly batch: 4 000 jobs for 200 customers, one of
// them with a quarter of all jobs. One producer submits every job with
// SubmitWith{Block: true}. When a customer's queue is full, the producer
// waits for a slot instead of losing the job. A progress line is printed
// every 200ms.
//
// One producer goes at the pace of the customer it waits for. While it is
// blocked on customer-0's full queue, the jobs behind it in the loop wait
// too. Give each customer (or each shard of customers) its own producer
// if that matters.
//
// The policy uses IsolationFairShare, so a customer's queue threshold
// counts all its waiting tasks and bounds them. (Under the default
// IsolationOff, tasks wait first for a global permit, where no per-customer
// threshold counts them.) The program checks what it claims and exits
// non-zero if a claim fails. The claims are that no customer ever has more
// than its threshold of jobs waiting, and that every job succeeds.
//
//	go run ./examples/batch
package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc"
)

const (
	customers = 200
	jobs      = 4000
	threshold = 10 // waiting jobs per customer, at most
)

func main() {
	policy, err := groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(32).
		DefaultMaxConcurrencyPerGroup(4).
		DefaultQueueThresholdPerGroup(threshold).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()

	// Ctrl-C stops the producer. This context is also every job's parent,
	// so it must live as long as the jobs. Do not wrap it in a short
	// timeout to bound the wait. MaxWait does that.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// A watcher prints progress and samples every customer's backlog.
	var w watcher
	w.start = time.Now()
	watchCtx, endWatch := context.WithCancel(ctx)
	var watch sync.WaitGroup
	watch.Go(func() { w.run(watchCtx, e) })

	handles := make([]*groupconc.TaskHandle[int], 0, jobs)
	for i, customer := range plan() {
		h, err := groupconc.SubmitWith(ctx, e, customer, fmt.Sprintf("job-%d", i), job(i),
			groupconc.SubmitOptions{Block: true, MaxWait: 30 * time.Second})
		if err != nil { // ctx ended or e closed: job i and the rest were not taken
			log.Fatalf("stopped at job %d: %v", i, err)
		}
		handles = append(handles, h)
		w.submitted.Add(1)
	}

	counts := map[groupconc.TaskStatus]int{}
	for _, h := range handles {
		counts[h.Wait().Status]++
	}
	endWatch()
	watch.Wait()
	w.progress(e)

	fmt.Printf("\n%d jobs in %v: %d succeeded, %d failed, %d cancelled, %d rejected\n",
		jobs, time.Since(w.start).Round(10*time.Millisecond), counts[groupconc.StatusSuccess],
		counts[groupconc.StatusFailed], counts[groupconc.StatusCancelled], counts[groupconc.StatusRejected])
	fmt.Printf("most jobs waiting for one customer at any sample: %d (threshold %d)\n", w.peak, threshold)

	ok := true
	if counts[groupconc.StatusSuccess] != jobs {
		fmt.Println("FAIL: not every job succeeded")
		ok = false
	}
	if w.peak > threshold {
		fmt.Println("FAIL: a customer had more jobs waiting than its threshold")
		ok = false
	}
	if !ok {
		os.Exit(1)
	}
}

// plan returns the customer of each job. Customer-0 has a quarter of the
// jobs. The rest are spread at random, seeded, so every run is alike.
func plan() []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, jobs)
	for i := range out {
		if i%4 == 0 {
			out[i] = "customer-0"
		} else {
			out[i] = fmt.Sprintf("customer-%d", 1+r.IntN(customers-1))
		}
	}
	return out
}

// job is one unit of work, 5ms of waiting on a backend.
func job(i int) groupconc.Task[int] {
	return func(ctx context.Context) (int, error) {
		select {
		case <-time.After(5 * time.Millisecond):
			return i, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// watcher prints progress every 200ms and records the most tasks any
// one customer had waiting, sampled every millisecond.
type watcher struct {
	start     time.Time
	submitted atomic.Int64
	peak      int // read once run has returned
}

// run samples until ctx ends.
func (w *watcher) run(ctx context.Context, e *groupconc.GroupExecutor) {
	sample := time.NewTicker(time.Millisecond)
	defer sample.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			w.progress(e)
		case <-sample.C:
			for gs := range e.AllGroupStats() {
				w.peak = max(w.peak, gs.Waiting)
			}
		}
	}
}

// progress prints one line of what the executor holds.
func (w *watcher) progress(e *groupconc.GroupExecutor) {
	s := e.Stats()
	fmt.Printf("%6v  submitted %4d/%d  running %2d  waiting %3d  producer blocked %d  done %4d\n",
		time.Since(w.start).Round(time.Millisecond), w.submitted.Load(), jobs, s.Running, s.Waiting, s.Blocked,
		s.Succeeded+s.Failed+s.Cancelled+s.Rejected)
}
