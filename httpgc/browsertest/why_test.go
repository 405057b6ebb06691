package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

func allowAll(*http.Request, httpgc.Action) bool { return true }

// history returns how many samples the server holds for key's row.
func history(t *testing.T, base, key string) int {
	t.Helper()
	resp, err := http.Get(base + "api/group?group=" + url.QueryEscape(key))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ History []int }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return len(r.History)
}

// whyOf is the JavaScript expression for the reason a row shows, and
// hungOf for whether it shows the hung tag.
func whyOf(key string) string {
	return `(` + row(key) + `.querySelector('td.why .why-tag:not(.why-hung)')?.textContent ?? '')`
}

func hungOf(key string) string { return row(key) + `.querySelector('td.why .why-hung') !== null` }

func TestAHungGroupIsToldApartFromABusyOneAndAGroupPausesFromItsRow(t *testing.T) {
	s := newService(t, httpgc.Options{AllowWrites: true, Authorize: allowAll, LongRun: 2 * time.Second})
	// The server keeps the history from the start, so the page draws it
	// whole on load: wait for 15 samples (3 s) before opening the page.
	tick := time.NewTicker(100 * time.Millisecond) // polls the server over HTTP, as the page would
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for history(t, s.url, "acme") < 15 {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the server holds fewer than 15 samples of acme after 20 s")
		}
	}
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "acme's row shows", row("acme")+` !== null`)
	if n := eval[int](t, tab, row("acme")+`.querySelector('td.history polyline').getAttribute('points').split(' ').length`); n < 15 {
		t.Errorf("acme's sparkline has %d points on load, want the server's 15 or more", n)
	}

	// hooli's backend hangs: 3 run, 100 wait, none finishes.
	waitFor(t, tab, "hooli is told hung", row("hooli")+` !== null && `+hungOf("hooli"))
	if got := eval[string](t, tab, whyOf("hooli")); got != "own limit: concurrency" {
		t.Errorf("hooli's why is %q, want own limit: concurrency", got)
	}
	waitFor(t, tab, "acme's tasks are seen finishing",
		`parseInt((`+row("acme")+`.querySelector('td.recent .done')?.textContent ?? '0').replace(/,/g, '')) > 0`)
	if eval[bool](t, tab, hungOf("acme")+` || `+row("acme")+`.classList.contains('hung')`) {
		t.Error("busy acme is told hung")
	}
	if run := eval[string](t, tab, row("acme")+`.querySelector('td.oldest-run').textContent`); !strings.HasSuffix(run, " ms") && run != "–" {
		t.Errorf("acme's oldest run is %q, want milliseconds", run)
	}

	// The warnings summary sits above the groups, one line per group.
	waitFor(t, tab, "hooli's warnings are summed up", `document.querySelector('#warnsummary tbody tr[data-group="hooli"]') !== null`)
	if !eval[bool](t, tab, `!!(document.getElementById('warnings-panel').compareDocumentPosition(
		document.getElementById('groups-panel')) & Node.DOCUMENT_POSITION_FOLLOWING)`) {
		t.Error("the warnings summary is not above the groups")
	}
	if eval[bool](t, tab, `document.getElementById('warnall').open`) {
		t.Error("the full list of warnings is open before it is asked for")
	}

	// Pause initech from its row, as a user would.
	eval[bool](t, tab, row("initech")+`.querySelector('button.rowpause').click(), true`)
	waitFor(t, tab, "initech's row says paused", row("initech")+` !== null && `+row("initech")+`.querySelector('.badge.paused') !== null && `+
		whyOf("initech")+` === 'paused' && `+row("initech")+`.querySelector('button.rowpause').textContent === 'Resume'`)
	if st, _ := s.e.GroupStats("initech"); !st.Paused {
		t.Error("initech's GroupStats().Paused is false after the page paused it")
	}
	// umbrella's users show under it once opened.
	waitFor(t, tab, "umbrella's row shows", row("umbrella")+`?.querySelector('button.twisty') != null`)
	eval[bool](t, tab, row("umbrella")+`.querySelector('button.twisty').click(), true`)
	waitFor(t, tab, "umbrella's users show", row("umbrella/ana")+`?.hidden === false`)
	eval[bool](t, tab, `document.activeElement.blur(), true`) // a click from a script counts as from the keyboard
	waitFor(t, tab, "a user of umbrella waits for umbrella's limit", `[...document.querySelectorAll('#groups tbody tr[data-group^="umbrella/"]')].some((tr) =>
		tr.querySelector('td.why .why-tag')?.textContent === 'parent limit: umbrella')`)
	var also string
	switch {
	case *screenshotTo != "":
		also = *screenshotTo
	case *writeDocs:
		also = "../../docs/dashboard.png"
	}
	screenshot(t, tab, also)

	eval[bool](t, tab, row("initech")+`.querySelector('button.rowpause').click(), true`)
	waitFor(t, tab, "initech's row says it runs again", row("initech")+` !== null && `+row("initech")+`.querySelector('.badge.paused') === null`)
	if st, _ := s.e.GroupStats("initech"); st.Paused {
		t.Error("initech's GroupStats().Paused is true after the page resumed it")
	}
}

func TestEachReasonShowsOnItsRow(t *testing.T) {
	policy, err := groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(4).
		PerGroupMaxConcurrency(map[string]int{"hog": 2}).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	e := groupconc.New(policy)
	gate := make(chan struct{})
	started := make(chan struct{}, 16)
	held := func(ctx context.Context) (int, error) {
		started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return 0, nil
	}
	submit := func(key string, task groupconc.Task[int]) *groupconc.TaskHandle[int] {
		h, err := groupconc.Submit(context.Background(), e, key, fmt.Sprint(key, time.Now().UnixNano()), task)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	submit("paused", func(context.Context) (int, error) { return 0, nil }).Wait()
	yes := true
	if err := e.SetGroupOverride("paused", groupconc.GroupOverride{Paused: &yes}); err != nil {
		t.Fatal(err)
	}
	// The global cap's four permits: hog 2, own 1, long 1.
	for _, key := range []string{"hog", "hog", "own", "own", "long", "paused"} {
		submit(key, held)
	}
	for range 4 {
		<-started
	}
	submit("capped", held)

	h, err := httpgc.New(e, httpgc.Options{Interval: 200 * time.Millisecond, LongRun: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		close(gate)
		h.Close()
		srv.Close()
		e.Close()
	})
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"own":    `=== 'own limit: concurrency'`,
		"capped": `=== 'global cap'`,
		"paused": `=== 'paused'`,
		"long":   `.startsWith('running long: ')`,
	} {
		waitFor(t, tab, key+"'s row gives its reason", row(key)+` !== null && `+whyOf(key)+want)
	}
	// At its limit, running long and finishing nothing, long is hung, and
	// so is own, whose second task waits behind its first.
	waitFor(t, tab, "long and own are told hung", hungOf("long")+` && `+hungOf("own"))
	for _, key := range []string{"capped", "paused"} {
		if eval[bool](t, tab, hungOf(key)) {
			t.Errorf("%s's row shows hung", key)
		}
	}
	screenshot(t, tab, "")
}
