// Command metrics is a small HTTP service with per-tenant limits that
// serves its groupconc metrics at /metrics, through promgc. It drives
// itself with a burst of requests and prints what /metrics shows twice:
// while the burst is held inside the service, and after it has drained.
//
//	cd examples/metrics && go run .
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Each tenant's concurrency limit and how many requests it sends at once.
// Only acme and globex get a group label of their own; the others share
// "_other".
var tenants = []struct {
	name     string
	limit    int
	requests int
}{
	{"acme", 4, 10},
	{"globex", 2, 6},
	{"initech", 1, 3},
	{"umbrella", 1, 3},
}

const queuePerTenant = 4 // requests that may wait per tenant; more get 429

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run starts the service on a loopback port, sends the burst, and writes
// the two scrapes to out.
func run(ctx context.Context, out io.Writer) error {
	limits, total := map[string]int{}, 0
	for _, t := range tenants {
		limits[t.name] = t.limit
		total += t.requests
	}
	backend := make(chan struct{}) // closed once the first scrape is taken
	placed := make(chan struct{}, total)
	svc, err := newService(config{
		limits:     limits,
		queue:      queuePerTenant,
		global:     32,
		labelled:   []string{"acme", "globex"},
		executorID: "api",
		work: func(ctx context.Context) (string, error) {
			select {
			case <-backend:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			time.Sleep(10 * time.Millisecond) // the backend's work
			return "done", nil
		},
		placed: func(string) { placed <- struct{}{} },
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: svc.handler()}
	var serving sync.WaitGroup
	serving.Go(func() { _ = srv.Serve(ln) })
	defer func() {
		_ = srv.Shutdown(context.Background())
		serving.Wait()
	}()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: total}}
	defer client.CloseIdleConnections()

	// The burst: every request at once.
	var (
		mu    sync.Mutex
		codes = map[string]map[int]int{} // tenant → status code → count; guarded by mu
		burst sync.WaitGroup
	)
	for _, t := range tenants {
		counts := map[int]int{}
		codes[t.name] = counts
		for range t.requests {
			burst.Go(func() {
				code := post(ctx, client, base, t.name)
				mu.Lock()
				counts[code]++
				mu.Unlock()
			})
		}
	}
	for range total {
		select {
		case <-placed: // running, waiting, or rejected
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Fprintln(out, "/metrics while the burst is held:")
	if err := scrape(ctx, client, base, out, "groupconc_tasks{", "groupconc_groups", "groupconc_global_inflight", "groupconc_oldest_wait_seconds", "groupconc_tasks_rejected_total"); err != nil {
		return err
	}
	close(backend)
	burst.Wait()

	fmt.Fprintln(out, "\nresponses:")
	for _, t := range tenants {
		fmt.Fprintf(out, "  %-9s 200 × %d, 429 × %d\n", t.name, codes[t.name][http.StatusOK], codes[t.name][http.StatusTooManyRequests])
	}
	// Draining also lets the metrics listener hear of the last tasks.
	if err := svc.drain(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "\n/metrics after the burst drained:")
	return scrape(ctx, client, base, out, "groupconc_tasks_submitted_total", "groupconc_tasks_completed_total", "groupconc_task_wait_seconds_count", "groupconc_task_wait_seconds_sum", "groupconc_task_run_seconds_count")
}

// post sends one request of tenant and returns the status code, or 0 if
// the request failed.
func post(ctx context.Context, client *http.Client, base, tenant string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/work", nil)
	if err != nil {
		return 0
	}
	req.Header.Set("X-Tenant", tenant)
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// scrape gets /metrics and writes the sample lines that start with one of
// prefixes.
func scrape(ctx context.Context, client *http.Client, base string, out io.Writer, prefixes ...string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("metrics: /metrics answered " + resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				fmt.Fprintln(out, "  "+line)
				break
			}
		}
	}
	return sc.Err()
}
