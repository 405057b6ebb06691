package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// config is what a service is built from.
type config struct {
	limits     map[string]int // per-tenant concurrency; other tenants get 1
	queue      int            // tasks that may wait per tenant
	global     int            // tasks in flight over all tenants
	labelled   []string       // tenants with a group label of their own
	work       groupconc.Task[string]
	placed     func(tenant string) // told of each request Submit placed; may be nil
	executorID string
}

// service runs each request's work under its tenant's limit, and serves
// its metrics at /metrics.
type service struct {
	exec   *groupconc.GroupExecutor
	reg    *prometheus.Registry
	work   groupconc.Task[string]
	placed func(tenant string)
	ids    atomic.Int64
}

func newService(c config) (*service, error) {
	m, err := promgc.New(promgc.Options{
		ExecutorName:   c.executorID,
		GroupAllowlist: c.labelled, // every other tenant is labelled _other
	})
	if err != nil {
		return nil, err
	}
	policy, err := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(c.limits).
		DefaultMaxConcurrencyPerGroup(1).
		DefaultQueueThresholdPerGroup(c.queue).
		GlobalMaxInFlight(c.global).
		TaskLifecycleListener(m.Listener()).
		Build()
	if err != nil {
		return nil, err
	}
	s := &service{exec: groupconc.New(policy), reg: prometheus.NewRegistry(), work: c.work, placed: c.placed}
	s.reg.MustRegister(m.Collector(s.exec))
	return s, nil
}

// handler serves POST /work, with the tenant in the X-Tenant header, and
// GET /metrics.
func (s *service) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /work", s.serveWork)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}

// serveWork runs the work in the tenant's group and answers 200 with its
// result, 429 if the tenant's queue is full, 503 if the service is closing.
func (s *service) serveWork(w http.ResponseWriter, r *http.Request) {
	tenant := r.Header.Get("X-Tenant")
	if tenant == "" {
		http.Error(w, "X-Tenant header missing", http.StatusBadRequest)
		return
	}
	h, err := groupconc.Submit(r.Context(), s.exec, tenant, fmt.Sprint("req-", s.ids.Add(1)), s.work)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	// Submit has placed the task: running, waiting, or already rejected.
	if s.placed != nil {
		s.placed(tenant)
	}
	res, _ := h.Await(r.Context())
	switch res.Status {
	case groupconc.StatusSuccess:
		fmt.Fprintln(w, res.Value)
	case groupconc.StatusRejected:
		http.Error(w, "too many requests for "+tenant, http.StatusTooManyRequests)
	case groupconc.StatusCancelled:
		http.Error(w, "cancelled", http.StatusServiceUnavailable)
	default:
		http.Error(w, res.Err.Error(), http.StatusInternalServerError)
	}
}

// drain lets every accepted request's work finish, and stops accepting.
func (s *service) drain(ctx context.Context) error { return s.exec.Shutdown(ctx) }
