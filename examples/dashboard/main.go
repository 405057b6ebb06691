// Command dashboard runs a small multi-tenant service under synthetic load
// and serves groupconc's dashboard for it on 127.0.0.1: steady traffic from
// many tenants, a burst from one every 20 seconds, and one tenant whose
// backend hangs, so its tasks pile up and raise pressure warnings. The
// users of umbrella ("umbrella/ana") share its limit. Open its row to see
// them.
//
//	go run ./examples/dashboard            # until Ctrl-C
//	go run ./examples/dashboard -for 10s   # stops by itself
//	go run ./examples/dashboard -readonly  # no form to change limits
//	go run ./examples/dashboard -host dash.example.com  # behind a proxy of that name
//
// Open the URL it prints. Click a group to see what decided its limits,
// and (unless -readonly) override one. The table's badge turns "override".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "where to listen (port 0: any free port)")
	runFor := flag.Duration("for", 0, "stop after this long (0: run until interrupted)")
	readOnly := flag.Bool("readonly", false, "serve the dashboard without writes")
	var hosts hostList
	flag.Var(&hosts, "host", "a public name a reverse proxy serves the dashboard as (repeatable); loopback names are always served")
	flag.Parse()
	if err := run(*addr, *runFor, *readOnly, hosts); err != nil {
		log.Fatal(err)
	}
}

func run(addr string, runFor time.Duration, readOnly bool, hosts []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, runFor)
		defer cancel()
	}

	policy, err := newPolicy()
	if err != nil {
		return err
	}
	e := groupconc.New(policy)
	defer e.Close()
	// Only requests whose Host is loopback or listed here are served, so a
	// page that rebinds its own name to 127.0.0.1 is refused. Behind a
	// reverse proxy that passes the Host on, list the proxy's public name.
	opts := httpgc.Options{AllowedHosts: hosts}
	if !readOnly {
		// Writes need Authorize. This demo lets any local client write;
		// a real service would check the request's credentials.
		opts.AllowWrites = true
		opts.Authorize = func(r *http.Request, _ httpgc.Action) bool { return loopback(r.RemoteAddr) }
		opts.Audit = func(ev httpgc.AuditEvent) {
			log.Printf("audit: %s %s %q by %s: max concurrency %d -> %d (err: %v)",
				ev.At.Format(time.TimeOnly), ev.Action, ev.Group, ev.Who, ev.Before.MaxConcurrency, ev.After.MaxConcurrency, ev.Err)
		}
	}
	// The handler watches e's pressure warnings for its page until Close.
	dash, err := httpgc.New(e, opts)
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("/debug/groupconc/", http.StripPrefix("/debug/groupconc", dash))
	mux.Handle("/{$}", http.RedirectHandler("/debug/groupconc/", http.StatusFound))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("dashboard: http://%s/debug/groupconc/\n", ln.Addr())

	done := startLoad(ctx, e)
	<-ctx.Done()
	fmt.Println("stopping")
	dash.Close() // ends the streams, which Shutdown would wait for
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutCtx)
	e.Close()
	<-done
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// newPolicy returns the service's limits. Named tenants have their own, the
// "team-" tenants get theirs from a resolver, the rest the defaults. Fair
// share keeps the global cap from going to one tenant's burst. The users of
// umbrella ("umbrella/ana") share its limit. Its pressure thresholds
// decide the warnings the dashboard lists.
func newPolicy() (*groupconc.GroupPolicy, error) {
	return groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(48).
		ParentSeparator("/").
		PerGroupMaxConcurrency(map[string]int{"acme": 8, "globex": 6, "initech": 4, "hooli": 3, "umbrella": 4}).
		ConcurrencyResolver(func(key string) int { // by plan, for the tenants not named above
			if strings.HasPrefix(key, "team-") {
				return 3
			}
			return 2
		}).
		DefaultQueueThresholdPerGroup(100).
		PerGroupQueueThreshold(map[string]int{"globex": 400}).
		PerGroupMaxInFlight(map[string]int{"acme": 40}).
		PerGroupWeight(map[string]int{"acme": 3, "globex": 2}).
		PressureWarnings(groupconc.PressureConfig{BacklogCount: 150, BacklogAge: 3 * time.Second, Cooldown: 10 * time.Second}, nil).
		Build()
}

// hostList is a repeatable flag.
type hostList []string

func (l *hostList) String() string { return strings.Join(*l, ",") }

func (l *hostList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// loopback reports whether addr, a RemoteAddr, is a loopback address.
func loopback(addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}
