// Command tenants puts per-tenant limits in front of an HTTP backend, so a
// tenant that sends many requests at once cannot take the backend's capacity
// from the others. The backend is a local httptest server that records, per
// tenant, how many of its requests it served at once.
//
//	go run ./examples/tenants
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

// Each tenant's concurrency limit and how many requests it sends at once.
var tenants = []struct {
	name     string
	limit    int
	requests int
}{
	{"acme", 3, 8},
	{"globex", 1, 4},
	{"initech", 2, 6},
}

func main() {
	b := newBackend()
	srv := httptest.NewServer(b)
	defer srv.Close()
	client := srv.Client()

	limits := map[string]int{}
	for _, t := range tenants {
		limits[t.name] = t.limit
	}
	policy, err := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(limits).
		GlobalMaxInFlight(64).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()

	// Hold the backend until every tenant has as many requests in it as its
	// limit allows, so the snapshot below shows each group full.
	b.hold()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var handles []*groupconc.TaskHandle[string]
	admitted := 0
	for _, t := range tenants {
		admitted += t.limit
		for i := 1; i <= t.requests; i++ {
			id := fmt.Sprintf("%s-%d", t.name, i)
			h, err := groupconc.Submit(ctx, e, t.name, id, fetch(client, srv.URL, t.name, id))
			if err != nil {
				log.Fatal(err)
			}
			handles = append(handles, h)
		}
	}
	if err := b.waitArrivals(ctx, admitted); err != nil {
		log.Fatal(err)
	}

	fmt.Println("while the backend holds the first requests:")
	fmt.Printf("  %-8s %7s %7s %8s %5s\n", "tenant", "running", "waiting", "inflight", "limit")
	for _, t := range tenants {
		s, _ := e.GroupStats(t.name)
		fmt.Printf("  %-8s %7d %7d %8d %5d\n", s.GroupKey, s.Running, s.Waiting, s.InFlight, s.MaxConcurrency)
	}
	b.release()

	fmt.Println("\nresults:")
	for _, h := range handles {
		r := h.Wait()
		if r.Status != groupconc.StatusSuccess {
			fmt.Printf("  %-10s %s %v\n", r.TaskID, r.Status, r.Err)
			continue
		}
		fmt.Printf("  %-10s %s %-28s waited %v\n", r.TaskID, r.Status, r.Value, r.QueueWait().Round(10*time.Millisecond))
	}

	if err := e.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	s := e.Stats()
	fmt.Printf("\nexecutor: submitted=%d succeeded=%d failed=%d cancelled=%d rejected=%d\n",
		s.Submitted, s.Succeeded, s.Failed, s.Cancelled, s.Rejected)

	fmt.Println("\nwhat the backend saw at most at once:")
	peaks := b.peaks()
	for _, t := range tenants {
		fmt.Printf("  %-8s %d (limit %d)\n", t.name, peaks[t.name], t.limit)
	}
}

// fetch returns a task that asks the backend for id on behalf of tenant.
func fetch(client *http.Client, base, tenant, id string) groupconc.Task[string] {
	return func(ctx context.Context) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/items/"+id, nil)
		if err != nil {
			return "", err
		}
		req.Header.Set("X-Tenant", tenant)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("backend: %s", resp.Status)
		}
		return string(body), nil
	}
}

// backend is the HTTP service behind the executor. It counts, per tenant,
// the requests it is serving, and can hold requests until released.
type backend struct {
	arrived chan struct{} // one send per request while held
	gate    chan struct{} // closed to let held requests go

	mu      sync.Mutex
	held    bool           // guarded by mu
	current map[string]int // guarded by mu
	peak    map[string]int // guarded by mu
}

func newBackend() *backend {
	return &backend{
		arrived: make(chan struct{}, 64),
		gate:    make(chan struct{}),
		current: map[string]int{},
		peak:    map[string]int{},
	}
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant := r.Header.Get("X-Tenant")
	b.mu.Lock()
	b.current[tenant]++
	b.peak[tenant] = max(b.peak[tenant], b.current[tenant])
	held := b.held
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.current[tenant]--
		b.mu.Unlock()
	}()

	if held {
		b.arrived <- struct{}{}
		select {
		case <-b.gate:
		case <-r.Context().Done():
			return
		}
	}
	// Some work, so that requests of one tenant overlap when its limit
	// allows it.
	select {
	case <-time.After(20 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	fmt.Fprintf(w, "item %s for %s", r.URL.Path[len("/items/"):], tenant)
}

func (b *backend) hold() {
	b.mu.Lock()
	b.held = true
	b.mu.Unlock()
}

// waitArrivals waits until n held requests have arrived.
func (b *backend) waitArrivals(ctx context.Context, n int) error {
	for range n {
		select {
		case <-b.arrived:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (b *backend) release() {
	b.mu.Lock()
	b.held = false
	b.mu.Unlock()
	close(b.gate)
}

func (b *backend) peaks() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.peak)
}
