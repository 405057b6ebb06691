package httplimit_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// A server that runs at most one request per tenant at once, with room
// for none waiting. The tenant comes from a header. A second request of a
// busy tenant gets 429 with Retry-After, and another tenant is served.
func ExampleMiddleware() {
	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(1).
		DefaultQueueThresholdPerGroup(0).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()

	inside := make(chan struct{})
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Tenant") == "acme" {
			inside <- struct{}{}
			<-release
		}
		fmt.Fprintln(w, "report for", r.Header.Get("X-Tenant"))
	})
	limit := httplimit.Middleware(e, httplimit.ServerOptions{
		Key:        httplimit.HeaderKey("X-Tenant", "anonymous"),
		RetryAfter: 2 * time.Second,
	})
	srv := httptest.NewServer(limit(mux))
	defer srv.Close()

	send := func(tenant string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/report", nil)
		req.Header.Set("X-Tenant", tenant)
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s: %d Retry-After=%q %s", tenant, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		send("acme")
	}()
	<-inside // acme's first request runs
	send("acme")
	send("globex")
	close(release)
	<-done
	// Output:
	// acme: 429 Retry-After="2" Too Many Requests
	// globex: 200 Retry-After="" report for globex
	// acme: 200 Retry-After="" report for acme
}

// Handler wraps one handler. Here each path is a group, the default key.
// With Block and MaxWait, a request that finds its path's queue full
// waits up to a second for a slot before its 429. The default policy's
// queue has no threshold, so here none ever waits for one.
func ExampleHandler() {
	e := groupconc.New(nil)
	defer e.Close()
	h := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}), httplimit.ServerOptions{Submit: groupconc.SubmitOptions{Block: true, MaxWait: time.Second}})

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hello", nil))
	fmt.Print(w.Code, " ", w.Body.String())
	st, _ := e.GroupStats("/hello")
	fmt.Println("group /hello succeeded:", st.Succeeded)
	// Output:
	// 200 hello
	// group /hello succeeded: 1
}

// HeaderKey takes the group from a header, with a group for the requests
// without it. The header's name is matched in any case.
func ExampleHeaderKey() {
	key := httplimit.HeaderKey("x-tenant", "anonymous")
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	fmt.Println(key(r))
	r.Header.Set("X-Tenant", "acme")
	fmt.Println(key(r))
	// Output:
	// anonymous
	// acme
}

// StatusCode says what a request that did not run is answered.
func ExampleStatusCode() {
	for _, err := range []error{
		&groupconc.RejectedError{GroupKey: "acme", Reason: groupconc.ReasonGroupQueueFull},
		&groupconc.RejectedError{GroupKey: "acme", Reason: groupconc.ReasonWaitTimeout},
		&groupconc.RejectedError{GroupKey: "acme", Reason: groupconc.ReasonGlobalQueueFull},
		groupconc.ErrClosed,
		httplimit.ErrNoKey,
	} {
		fmt.Println(httplimit.StatusCode(err), err)
	}
	// Output:
	// 429 groupconc: task "" of group "acme" rejected: group_queue_full
	// 429 groupconc: task "" of group "acme" rejected: wait_timeout
	// 503 groupconc: task "" of group "acme" rejected: global_queue_full
	// 503 groupconc: executor closed
	// 400 httplimit: the request has no group key
}

// An ErrorHandler can answer rejections its own way and leave the rest to
// WriteError.
func ExampleWriteError() {
	onError := func(w http.ResponseWriter, r *http.Request, err error) {
		var re *groupconc.RejectedError
		if errors.As(err, &re) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(httplimit.StatusCode(err))
			fmt.Fprintf(w, `{"error":%q}`+"\n", re.Reason)
			return
		}
		httplimit.WriteError(w, err, time.Second)
	}
	for _, err := range []error{&groupconc.RejectedError{Reason: groupconc.ReasonGroupQueueFull}, groupconc.ErrClosed} {
		w := httptest.NewRecorder()
		onError(w, httptest.NewRequest(http.MethodGet, "/", nil), err)
		fmt.Print(w.Code, " Retry-After=", w.Header().Get("Retry-After"), " ", w.Body.String())
	}
	// Output:
	// 429 Retry-After=5 {"error":"group_queue_full"}
	// 503 Retry-After=1 Service Unavailable
}

// A client that makes at most two calls at once to each host. A third call
// to a host waits, unsent, until one of the two has its body closed.
func ExampleTransport() {
	policy, err := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2).Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	client := &http.Client{Transport: &httplimit.Transport{Executor: e}}
	defer client.CloseIdleConnections()

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()
	var open []*http.Response
	for range 2 {
		resp, err := client.Get(srv.URL) // holds a permit until its body is closed
		if err != nil {
			log.Fatal(err)
		}
		open = append(open, resp)
	}
	third := make(chan string)
	go func() {
		resp, err := client.Get(srv.URL)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		third <- string(body)
	}()
	host := srv.Listener.Addr().String() // the group: HostKey
	for st, _ := e.GroupStats(host); st.Waiting == 0; st, _ = e.GroupStats(host) {
		runtime.Gosched()
	}
	fmt.Println("the third call waits, unsent")
	open[0].Body.Close() // gives its permit to the third call
	fmt.Println("third:", <-third)
	open[1].Body.Close()
	fmt.Println("calls done:", e.Stats().Succeeded)
	// Output:
	// the third call waits, unsent
	// third: pong
	// calls done: 3
}

// A call that its host's group turns away returns a *NotSentError, which
// wraps the *groupconc.RejectedError.
func ExampleNotSentError() {
	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(1).
		DefaultQueueThresholdPerGroup(0).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	client := &http.Client{Transport: &httplimit.Transport{Executor: e}}
	defer client.CloseIdleConnections()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()

	first, err := client.Get(srv.URL) // holds the host's one permit until closed
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Get(srv.URL)
	var ns *httplimit.NotSentError
	var re *groupconc.RejectedError
	fmt.Println(errors.As(err, &ns), errors.Is(err, groupconc.ErrRejected))
	if errors.As(err, &re) {
		fmt.Println("reason:", re.Reason)
	}
	first.Body.Close()
	// Output:
	// true true
	// reason: group_queue_full
}

// CloseIdleConnections reaches the base transport's idle connections, so
// http.Client.CloseIdleConnections works through a Transport.
func ExampleTransport_CloseIdleConnections() {
	e := groupconc.New(nil)
	defer e.Close()
	base := &http.Transport{}
	client := &http.Client{Transport: &httplimit.Transport{Base: base, Executor: e}}
	client.CloseIdleConnections() // calls base.CloseIdleConnections
	fmt.Println("closed")
	// Output:
	// closed
}
