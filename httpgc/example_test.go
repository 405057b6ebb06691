package httpgc_test

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// Mount the dashboard under a path of the application's mux. The handler
// watches the executor's pressure warnings for the page's list itself.
// Read-only, for loopback clients only: the defaults.
func Example() {
	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(4).
		PressureWarnings(groupconc.PressureConfig{BacklogCount: 100}, nil). // thresholds only
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	dash, err := httpgc.New(e, httpgc.Options{}) // watches e's warnings until Close
	if err != nil {
		log.Fatal(err)
	}
	defer dash.Close()

	mux := http.NewServeMux()
	mux.Handle("/debug/groupconc/", http.StripPrefix("/debug/groupconc", dash))
	srv := httptest.NewServer(mux) // the page is at srv.URL + "/debug/groupconc/"
	defer srv.Close()

	h, _ := groupconc.Submit(context.Background(), e, "tenant-1", "job-1", func(context.Context) (int, error) { return 1, nil })
	h.Wait()
	resp, err := http.Get(srv.URL + "/debug/groupconc/api/groups/tenant-1")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var row struct {
		Group                   string
		MaxConcurrency, Running int
		Succeeded               uint64
		Why                     string // "" since nothing waits
	}
	if err := json.NewDecoder(resp.Body).Decode(&row); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", row)
	// Output:
	// {Group:tenant-1 MaxConcurrency:4 Running:0 Succeeded:1 Why:}
}

// Writes need AllowWrites and an Authorize, asked per action: here any
// holder of the admin token may change limits, and nobody may shut a
// group down. Each write is told to Audit.
func ExampleOptions_writes() {
	e := groupconc.New(nil)
	defer e.Close()
	const token = "Bearer s3cret"
	dash, err := httpgc.New(e, httpgc.Options{
		AllowWrites: true,
		Authorize: func(r *http.Request, a httpgc.Action) bool {
			ok := subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(token)) == 1
			return ok && a != httpgc.ActionShutdown
		},
		Audit: func(ev httpgc.AuditEvent) {
			if ev.Refused != "" {
				fmt.Printf("audit: %s of %s refused (%d): %s\n", ev.Action, ev.Name, ev.Status, ev.Refused)
				return
			}
			fmt.Printf("audit: %s of %s: max concurrency %d -> %d\n", ev.Action, ev.Group, ev.Before.MaxConcurrency, ev.After.MaxConcurrency)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(dash)
	defer srv.Close()

	h, _ := groupconc.Submit(context.Background(), e, "tenant-1", "job-1", func(context.Context) (int, error) { return 1, nil })
	h.Wait()
	send := func(method, path, body string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(method, path, resp.Status)
	}
	send("PATCH", "/api/groups/tenant-1", `{"maxConcurrency":8}`)
	send("POST", "/api/groups/tenant-1/shutdown", ``)
	st, _ := e.GroupStats("tenant-1")
	fmt.Println("max concurrency:", st.MaxConcurrency)
	// Output:
	// audit: patch of tenant-1: max concurrency 1 -> 8
	// PATCH /api/groups/tenant-1 200 OK
	// audit: shutdown of tenant-1 refused (403): forbidden: not authorized to shutdown
	// POST /api/groups/tenant-1/shutdown 403 Forbidden
	// max concurrency: 8
}

// HashKey shows per-user keys as stable keyed hashes: the page and the API
// never show the keys, and URLs name groups by their hash.
func ExampleHashKey() {
	show := httpgc.HashKey([]byte("a secret the application keeps"))
	alice, again := show("user:alice@example.com"), show("user:alice@example.com")
	fmt.Println(alice == again)
	fmt.Println(strings.HasPrefix(show("user:alice@example.com"), "h-"), len(show("user:bob@example.com")))
	// Output:
	// true
	// true 18
}
