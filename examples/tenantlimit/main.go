// Command tenantlimit puts a per-tenant limit in front of an HTTP handler.
// Each tenant may run 2 requests at once and queue 4 more. Beyond that the
// server answers 429 Too Many Requests with a Retry-After header. Every
// outcome of a task maps to a response. Success is 200, rejected 429,
// failed 500 (a panic too), cancelled 504 (the request's deadline passed).
//
// It starts a server on 127.0.0.1, sends it a burst from a heavy tenant
// and a few requests from a light one, and prints what each got. It runs
// twice, under RejectAbort and RejectDiscard, since only RejectAbort
// reports a rejection as an error. The handler reads the result's Status,
// so both answer the same. It exits non-zero if a response breaks the
// mapping or the light tenant is turned away.
//
//	go run ./examples/tenantlimit
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

func main() {
	failed := false
	for _, rp := range []groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscard} {
		if !run(rp) {
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// newLimiter returns the executor. It uses fair share, so one tenant's backlog
// never holds the global permits another tenant needs, and per-tenant
// queue thresholds count every waiting task of the tenant.
func newLimiter(rp groupconc.RejectionPolicy) *groupconc.GroupExecutor {
	policy, err := groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(8).
		DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(4).
		RejectionPolicy(rp).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	return groupconc.New(policy)
}

// limited returns a handler that runs work under the tenant's limit.
func limited(e *groupconc.GroupExecutor, work func(ctx context.Context, path string) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := r.Header.Get("X-Tenant")
		if tenant == "" {
			http.Error(w, "missing X-Tenant", http.StatusBadRequest)
			return
		}
		// The request's context is the task's parent, and it carries a
		// deadline. Cancelling it when the handler returns is safe: the
		// handler waits for the task first.
		ctx, cancel := context.WithTimeout(r.Context(), 300*time.Millisecond)
		defer cancel()
		h, err := groupconc.Submit(ctx, e, tenant, r.URL.Path, func(ctx context.Context) (string, error) {
			return work(ctx, r.URL.Path)
		})
		if err != nil { // ErrClosed: the server is shutting down
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		res, err := h.Await(r.Context())
		if err != nil && !errors.Is(err, groupconc.ErrRejected) {
			return // the client went away; nobody reads an answer
		}
		respond(w, res)
	})
}

// respond maps every status to a response. It reads res.Status, not the
// error Await returns. That error is set for RejectAbort only.
func respond(w http.ResponseWriter, res groupconc.GroupResult[string]) {
	switch res.Status {
	case groupconc.StatusSuccess:
		fmt.Fprintln(w, res.Value)
	case groupconc.StatusRejected:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many requests for this tenant", http.StatusTooManyRequests)
	case groupconc.StatusFailed:
		var p *groupconc.PanicError
		if errors.As(res.Err, &p) {
			log.Printf("task %s panicked: %v", res.TaskID, p.Value)
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
	case groupconc.StatusCancelled:
		http.Error(w, "timed out", http.StatusGatewayTimeout)
	default:
		http.Error(w, "unknown status "+res.Status.String(), http.StatusInternalServerError)
	}
}

// work is the application's handler body.
func work(ctx context.Context, path string) (string, error) {
	switch path {
	case "/fail":
		return "", errors.New("backend said no")
	case "/panic":
		panic("a bug in the handler")
	case "/slow":
		<-ctx.Done() // runs past the request's deadline
		return "", ctx.Err()
	}
	select {
	case <-time.After(100 * time.Millisecond):
		return "report " + path, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// reply is what a client got.
type reply struct {
	tenant, path string
	code         int
	retryAfter   string
	body         string
}

func run(rp groupconc.RejectionPolicy) bool {
	e := newLimiter(rp)
	srv := httptest.NewServer(limited(e, work)) // listens on 127.0.0.1
	defer srv.Close()
	defer e.Close()

	var (
		mu      sync.Mutex
		replies []reply
		wg      sync.WaitGroup
	)
	send := func(tenant, path string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("X-Tenant", tenant)
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		mu.Lock()
		replies = append(replies, reply{tenant, path, resp.StatusCode, resp.Header.Get("Retry-After"), strings.TrimSpace(string(body))})
		mu.Unlock()
	}
	for i := range 20 { // the heavy tenant's burst
		wg.Go(func() { send("heavy", fmt.Sprintf("/report/%d", i)) })
	}
	for i := range 2 { // the light tenant, at the same time
		wg.Go(func() { send("light", fmt.Sprintf("/report/%d", i)) })
	}
	wg.Wait()
	for _, path := range []string{"/fail", "/panic", "/slow"} {
		send("light", path)
	}

	fmt.Printf("%v:\n", rp)
	codes := map[string]map[int]int{}
	ok := true
	for _, r := range replies {
		if codes[r.tenant] == nil {
			codes[r.tenant] = map[int]int{}
		}
		codes[r.tenant][r.code]++
		switch {
		case r.body == "":
			fmt.Printf("  FAIL: %s %s got %d with an empty body\n", r.tenant, r.path, r.code)
			ok = false
		case r.code == http.StatusTooManyRequests && r.retryAfter == "":
			fmt.Printf("  FAIL: %s %s got 429 without Retry-After\n", r.tenant, r.path)
			ok = false
		case r.tenant == "light" && r.code == http.StatusTooManyRequests:
			fmt.Printf("  FAIL: the light tenant was turned away (%s)\n", r.path)
			ok = false
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
		fmt.Printf("  %-5s %s\n", tenant, strings.Join(parts, ", "))
	}
	for _, want := range []struct {
		path string
		code int
	}{{"/fail", 500}, {"/panic", 500}, {"/slow", 504}} {
		for _, r := range replies {
			if r.path == want.path && r.code != want.code {
				fmt.Printf("  FAIL: %s got %d, want %d\n", r.path, r.code, want.code)
				ok = false
			}
		}
	}
	if codes["heavy"][http.StatusTooManyRequests] == 0 {
		fmt.Println("  FAIL: the heavy tenant's burst was never turned away")
		ok = false
	}
	if ok {
		fmt.Println("  every response carries a status and a body; the light tenant was never turned away")
	}
	return ok
}
