// Command httpserver runs a per-tenant HTTP server behind httplimit's
// middleware. Each tenant runs 2 requests at once and queues 2 more. A
// request that finds its tenant's queue full waits up to 300 ms for a
// slot (a bounded wait), then gets 429 with Retry-After. The X-Priority
// header ("high" or "low") orders the requests waiting for a slot.
//
// It starts the server on 127.0.0.1, sends a burst from a heavy tenant,
// an urgent request from it once the burst waits, and a few requests from
// a light tenant. It prints what each tenant got, and exits non-zero if a
// claim fails: the light tenant is never turned away, every 429 carries
// Retry-After, the burst is turned away in part, and the urgent request
// goes past the burst.
//
//	go run ./examples/httpserver
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

func main() {
	if !run() {
		os.Exit(1)
	}
}

// server returns the executor and the service under its limits.
func server() (*groupconc.GroupExecutor, http.Handler) {
	policy, err := groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(8).
		DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(2).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(50 * time.Millisecond): // the work
			fmt.Fprintln(w, "report for", r.Header.Get("X-Tenant"))
		case <-r.Context().Done():
		}
	})
	limit := httplimit.Middleware(e, httplimit.ServerOptions{
		Key:        httplimit.HeaderKey("X-Tenant", "anonymous"),
		Priority:   priority,
		Submit:     groupconc.SubmitOptions{Block: true, MaxWait: 300 * time.Millisecond},
		RetryAfter: 2 * time.Second,
	})
	return e, limit(mux)
}

// priority reads X-Priority. Anything else is normal.
func priority(r *http.Request) groupconc.Priority {
	switch r.Header.Get("X-Priority") {
	case "high":
		return groupconc.PriorityHigh
	case "low":
		return groupconc.PriorityLow
	}
	return groupconc.PriorityNormal
}

// reply is what a client got.
type reply struct {
	tenant, prio string
	code         int
	retryAfter   string
	at           time.Duration // when the answer came, since the start
}

func run() bool {
	e, h := server()
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	defer srv.Close()
	defer e.Close()

	start := time.Now()
	var (
		mu      sync.Mutex
		replies []reply
		wg      sync.WaitGroup
	)
	send := func(tenant, prio string) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/report", nil)
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("X-Tenant", tenant)
		req.Header.Set("X-Priority", prio)
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		replies = append(replies, reply{tenant, prio, resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(start)})
		mu.Unlock()
	}

	const burst = 24
	for range burst {
		wg.Go(func() { send("heavy", "low") })
	}
	// Once the burst fills the queue and waits for slots, an urgent request
	// of the same tenant arrives. It waits in front of the burst.
	blocked := waitFor(func() bool { return e.Stats().Blocked > 0 })
	wg.Go(func() { send("heavy", "high") })
	for range 3 {
		wg.Go(func() { send("light", "") })
	}
	wg.Wait()
	if !blocked {
		fmt.Println("FAIL: the burst never waited for a slot")
		return false
	}
	return report(e, replies)
}

// waitFor spins until cond holds, and reports whether it did within 10 s.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// report prints what each tenant got and checks the claims.
func report(e *groupconc.GroupExecutor, replies []reply) bool {
	codes := map[string]map[int]int{}
	ok := true
	fail := func(format string, args ...any) {
		fmt.Printf("FAIL: "+format+"\n", args...)
		ok = false
	}
	var urgent reply
	for _, r := range replies {
		if codes[r.tenant] == nil {
			codes[r.tenant] = map[int]int{}
		}
		codes[r.tenant][r.code]++
		switch {
		case r.code == http.StatusTooManyRequests && r.retryAfter != "2":
			fail("a 429 with Retry-After %q, want 2", r.retryAfter)
		case r.tenant == "light" && r.code != http.StatusOK:
			fail("the light tenant got %d", r.code)
		}
		if r.prio == "high" {
			urgent = r
		}
	}
	for _, tenant := range []string{"heavy", "light"} {
		var got []int
		for code := range codes[tenant] {
			got = append(got, code)
		}
		sort.Ints(got)
		var parts []string
		for _, code := range got {
			parts = append(parts, fmt.Sprintf("%d × %d %s", codes[tenant][code], code, http.StatusText(code)))
		}
		st, _ := e.GroupStats(tenant)
		fmt.Printf("%-5s %s (tasks: %d succeeded, %d rejected)\n", tenant, strings.Join(parts, ", "), st.Succeeded, st.Rejected)
	}
	fmt.Printf("the urgent request of heavy: %d after %v\n", urgent.code, urgent.at.Round(10*time.Millisecond))
	if codes["heavy"][http.StatusTooManyRequests] == 0 {
		fail("the heavy tenant's burst was never turned away")
	}
	if urgent.code != http.StatusOK {
		fail("the urgent request got %d: it should have gone past the burst", urgent.code)
	}
	if ok {
		fmt.Println("the light tenant was always served; every 429 carried Retry-After; the urgent request went first")
	}
	return ok
}
