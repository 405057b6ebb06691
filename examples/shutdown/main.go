// Command shutdown shows a graceful stop: on SIGINT or SIGTERM (or, with no
// signal, once its simulated work has been handed out) it stops submitting,
// gives the accepted tasks a deadline to finish with Shutdown, and cancels
// whatever is left.
//
//	go run ./examples/shutdown    # press Ctrl-C to stop it early
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kobe/groupconc"
)

const (
	jobs         = 10                     // simulated jobs handed out, one per tick
	tick         = 100 * time.Millisecond // pace of the producer
	drainTimeout = time.Second            // how long Shutdown may wait
)

func main() {
	// ctx ends on the first SIGINT or SIGTERM. It only stops the producer.
	// The tasks get a context of their own, so a signal does not cut them
	// off. Shutdown decides how long they may go on.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	// Close is idempotent. After Shutdown it has nothing left to do, and on
	// an early return it cancels every task.
	defer e.Close()

	var handles []*groupconc.TaskHandle[string]
	submit := func(group, id string, d time.Duration) {
		h, err := groupconc.Submit(context.Background(), e, group, id, job(d))
		if err != nil {
			log.Fatal(err)
		}
		handles = append(handles, h)
	}

	// A long export that will not finish before the drain deadline.
	submit("exports", "nightly-export", 30*time.Second)

	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	groups := []string{"orders", "emails"}
produce:
	for i := range jobs {
		select {
		case <-ctx.Done():
			fmt.Println("signal received: no more jobs")
			break produce
		case <-ticker.C:
		}
		group := groups[i%len(groups)]
		submit(group, fmt.Sprintf("%s-%d", group, i/len(groups)+1), time.Duration(200+(i%4)*100)*time.Millisecond)
	}
	// From here on a second signal ends the process at once.
	stop()

	s := e.Stats()
	fmt.Printf("shutting down: %d running, %d waiting; draining for up to %v\n", s.Running, s.Waiting, drainTimeout)
	start := time.Now()
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	switch err := e.Shutdown(sctx); {
	case err == nil:
		fmt.Printf("drained in %v\n", time.Since(start).Round(10*time.Millisecond))
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Printf("drain deadline passed after %v: the remaining tasks were cancelled\n", time.Since(start).Round(10*time.Millisecond))
	default:
		log.Fatal(err)
	}
	if err := e.Close(); err != nil {
		log.Fatal(err)
	}

	_, err = groupconc.Submit(context.Background(), e, "orders", "too-late", job(0))
	fmt.Println("submit after shutdown:", err)

	fmt.Println()
	for _, h := range handles {
		r := h.Wait()
		fmt.Printf("  %-15s %-9s ran %v\n", r.TaskID, r.Status, r.Duration().Round(10*time.Millisecond))
	}
	s = e.Stats()
	fmt.Printf("\nsucceeded=%d cancelled=%d of %d\n", s.Succeeded, s.Cancelled, s.Submitted)
}

// job returns a task that works for d, or stops early when cancelled.
func job(d time.Duration) groupconc.Task[string] {
	return func(ctx context.Context) (string, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return "done", nil
		case <-ctx.Done():
			// context.Cause(ctx) is groupconc.ErrClosed here when the
			// drain deadline passed.
			return "", ctx.Err()
		}
	}
}
