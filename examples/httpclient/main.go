// Command httpclient limits the calls an HTTP client makes to each
// downstream host, with httplimit.Transport. Every host gets 4 calls at
// once, and a slow host only 2. A call holds its host's permit until its
// response body is closed.
//
// It starts two downstream servers on 127.0.0.1, a fast one and a slow
// one. It makes 40 calls to each at once, and each server counts the
// calls inside it. Then one more call to the busy slow host gives up
// after 20 ms of waiting. It is never sent. The program prints what each
// host saw. It exits non-zero if a host saw more calls at once than its
// limit, or if the fast host waited for the slow one. So it does if the
// call that gave up was sent.
//
//	go run ./examples/httpclient
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

func main() {
	if !run() {
		os.Exit(1)
	}
}

// downstream is a server that counts the calls inside it.
type downstream struct {
	*httptest.Server
	delay         time.Duration
	cur, max, hit atomic.Int64
}

func newDownstream(delay time.Duration) *downstream {
	d := &downstream{delay: delay}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.hit.Add(1)
		n := d.cur.Add(1)
		for m := d.max.Load(); n > m && !d.max.CompareAndSwap(m, n); m = d.max.Load() {
		}
		defer d.cur.Add(-1)
		select {
		case <-time.After(d.delay):
			fmt.Fprintln(w, "ok")
		case <-r.Context().Done():
		}
	}))
	return d
}

func (d *downstream) host() string {
	u, err := url.Parse(d.URL)
	if err != nil {
		log.Fatal(err)
	}
	return u.Host // host:port, the Transport's default group key (httplimit.HostKey)
}

func run() bool {
	fast, slow := newDownstream(5*time.Millisecond), newDownstream(50*time.Millisecond)
	defer fast.Close()
	defer slow.Close()

	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(4).
		PerGroupMaxConcurrency(map[string]int{slow.host(): 2}).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	client := &http.Client{Transport: &httplimit.Transport{Executor: e}}
	defer client.CloseIdleConnections()

	call := func(ctx context.Context, d *downstream) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close() // gives the host's permit back
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}

	const calls = 40
	took := map[*downstream]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for _, d := range []*downstream{fast, slow} {
		var mine sync.WaitGroup
		for range calls {
			mine.Go(func() {
				if err := call(context.Background(), d); err != nil {
					log.Fatal(err)
				}
			})
		}
		wg.Go(func() {
			mine.Wait()
			mu.Lock()
			took[d] = time.Since(start)
			mu.Unlock()
		})
	}

	// Once 10 calls wait for the slow host, one more gives up after 20 ms.
	// Ten calls of 50 ms each, 2 at once, are ahead of it.
	waiting := waitFor(func() bool { st, _ := e.GroupStats(slow.host()); return st.Waiting >= 10 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	err = call(ctx, slow)
	cancel()
	wg.Wait()

	ok := true
	fail := func(format string, args ...any) {
		fmt.Printf("FAIL: "+format+"\n", args...)
		ok = false
	}
	if !waiting {
		fail("the slow host's calls never waited")
	}
	for _, h := range []struct {
		name  string
		d     *downstream
		limit int64
	}{{"fast", fast, 4}, {"slow", slow, 2}} {
		fmt.Printf("%s host: %d calls, at most %d at once (limit %d), all done after %v\n",
			h.name, h.d.hit.Load(), h.d.max.Load(), h.limit, took[h.d].Round(10*time.Millisecond))
		if h.d.max.Load() > h.limit {
			fail("the %s host saw %d calls at once, over its limit %d", h.name, h.d.max.Load(), h.limit)
		}
	}
	if took[fast] >= took[slow] {
		fail("the fast host finished after the slow one: it waited for it")
	}
	var ns *httplimit.NotSentError
	fmt.Printf("the call that gave up: %v\n", err)
	switch {
	case !errors.As(err, &ns) || !errors.Is(err, context.DeadlineExceeded):
		fail("the call that gave up returned %v, want a *NotSentError with its deadline", err)
	case slow.hit.Load() != calls:
		fail("the slow host saw %d calls, want %d: the call that gave up was sent", slow.hit.Load(), calls)
	}
	if ok {
		fmt.Println("each host saw at most its limit at once; the fast host never waited for the slow one")
	}
	return ok
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
