package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// jsq quotes s for JavaScript (JSON is valid JS for a string).
func jsq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// trOf is the JavaScript expression for the row of key, found by comparing
// strings, as a selector would need key escaped.
func trOf(key string) string {
	return `[...document.querySelectorAll('#groups tbody tr')].find((tr) => tr.dataset.group === ` + jsq(key) + `)`
}

// groups is an executor whose groups (keys) each have a task running and
// one waiting until the test ends, with a dashboard served through wrap.
type groups struct {
	e   *groupconc.GroupExecutor
	url string
}

func newGroups(t *testing.T, keys []string, opts httpgc.Options, wrap func(http.Handler) http.Handler) *groups {
	t.Helper()
	policy, err := groupconc.NewPolicyBuilder().
		ParentSeparator("/").
		DefaultMaxConcurrencyPerGroup(1).
		GlobalMaxInFlight(10000).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	e := groupconc.New(policy)
	gate := make(chan struct{})
	for i, key := range keys {
		for j := range 2 {
			_, err := groupconc.Submit(context.Background(), e, key, fmt.Sprint(i, "-", j), func(ctx context.Context) (struct{}, error) {
				select {
				case <-gate:
				case <-ctx.Done():
				}
				return struct{}{}, nil
			})
			if err != nil {
				t.Fatalf("submit %.40q: %v", key, err)
			}
		}
	}
	if opts.Interval == 0 {
		opts.Interval = 200 * time.Millisecond
	}
	h, err := httpgc.New(e, opts)
	if err != nil {
		t.Fatal(err)
	}
	var served http.Handler = h
	if wrap != nil {
		served = wrap(h)
	}
	srv := httptest.NewServer(served)
	t.Cleanup(func() {
		close(gate)
		h.Close()
		srv.Close()
		e.Close()
	})
	return &groups{e: e, url: srv.URL + "/"}
}

// A snapshot of many rows is slow, so the stream waits nine times as long
// as it took, well over 2.5 Intervals. The snapshot says so, and the page
// neither polls while the stream keeps its word nor drops to 100 rows.
func TestThePageDoesNotPollAStreamThatIsSlowButOnTime(t *testing.T) {
	const rows = 150
	var keys []string
	for i := range rows + 20 {
		keys = append(keys, fmt.Sprintf("u-%04d", i))
	}
	var polls atomic.Int64
	count := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/groups" {
				polls.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
	// The DisplayKey's sleep is a snapshot's cost (rows×0.1ms at least),
	// so that it is slow on any machine: over 2.5 Intervals between two.
	slow := func(key string) string { time.Sleep(100 * time.Microsecond); return key }
	g := newGroups(t, keys, httpgc.Options{Rows: rows, Interval: 100 * time.Millisecond, DisplayKey: slow}, count)
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(g.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the stream is live with all its rows", fmt.Sprintf(
		`document.getElementById('conn').textContent === 'live' && document.querySelectorAll('#groups tbody tr').length === %d`, rows))
	// Count the rows after each redraw, and the snapshots a second stream
	// gets, with the gaps between them.
	eval[bool](t, tab, `(() => {
		window.__fewest = Infinity;
		new MutationObserver(() => { window.__fewest = Math.min(window.__fewest, document.querySelectorAll('#groups tbody tr').length); })
			.observe(document.querySelector('#groups tbody'), { childList: true });
		window.__at = [];
		const es = new EventSource('api/events');
		es.addEventListener('snapshot', (ev) => { window.__at.push([performance.now(), JSON.parse(ev.data).nextMs]); if (window.__at.length === 5) es.close(); });
		return true;
	})()`)
	p0 := polls.Load()
	waitFor(t, tab, "five more snapshots", `window.__at.length === 5`)
	gaps := eval[string](t, tab, `JSON.stringify(window.__at.slice(1).map((a, i) => [Math.round(a[0] - window.__at[i][0]), window.__at[i][1]]))`)
	if n := polls.Load() - p0; n > 0 {
		t.Errorf("the stream was live, yet the page polled api/groups %d times (gaps and nextMs: %s)", n, gaps)
	}
	if fewest := eval[int](t, tab, `window.__fewest === Infinity ? -1 : window.__fewest`); fewest != -1 && fewest != rows {
		t.Errorf("the table fell to %d rows, want %d (Rows)", fewest, rows)
	}
	t.Logf("gaps between snapshots and the nextMs before each (ms): %s", gaps)
}

// Only a long key's name is cut short: the count of its children and its
// "paused" badge show within its cell.
func TestALongKeysPausedBadgeAndChildCountShow(t *testing.T) {
	key := "user-" + strings.Repeat("0123456789", 4) // 45 bytes, id-like
	g := newGroups(t, []string{key, key + "/x"}, httpgc.Options{}, nil)
	yes := true
	if err := g.e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &yes}); err != nil {
		t.Fatal(err)
	}
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(g.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the paused badge is drawn", trOf(key)+`?.querySelector('td.key .badge.paused') != null`)
	for _, sel := range []string{".badge.paused", ".kids", "button.twisty"} {
		// Within the cell's box, and not under another element.
		in := eval[string](t, tab, `(() => { const td = `+trOf(key)+`.querySelector('td.key'), b = td.querySelector('`+sel+`');
			const r = b.getBoundingClientRect(), c = td.getBoundingClientRect();
			const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
			return r.width > 0 && r.left >= c.left - 0.5 && r.right <= c.right + 0.5 && b.contains(hit) ? '' :
				JSON.stringify({ cell: c, it: r, hit: hit && hit.outerHTML.slice(0, 80) }); })()`)
		if in != "" {
			t.Errorf("the %s of %q is not shown within its cell: %s", sel, key, in)
		}
	}
	if w := eval[float64](t, tab, trOf(key)+`.querySelector('td.key .name').getBoundingClientRect().width`); w <= 0 || w > 201 {
		t.Errorf("the name is %.1f px wide, want it cut at 200", w)
	}
}

// A row's button that fails says so above the table, with no panel open.
func TestARowButtonsFailureShows(t *testing.T) {
	// Authorize grants everything but writes to "locked".
	auth := func(r *http.Request, _ httpgc.Action) bool { return r.URL.Query().Get("group") != "locked" }
	g := newGroups(t, []string{"locked", "free"}, httpgc.Options{AllowWrites: true, Authorize: auth}, nil)
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(g.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the rows show", trOf("locked")+` !== undefined && `+trOf("free")+` !== undefined`)
	eval[bool](t, tab, trOf("locked")+`.querySelector('button.rowpause').click(), true`)
	waitFor(t, tab, "the failure shows", `!document.getElementById('notice').hidden`)
	if got := eval[string](t, tab, `document.getElementById('notice').textContent`); got != "locked: pausing failed: 403 forbidden: not authorized to patch" {
		t.Errorf("the notice says %q", got)
	}
	if !eval[bool](t, tab, `document.getElementById('detail').hidden`) {
		t.Error("the button opened the panel")
	}
	// A write that works hides it.
	eval[bool](t, tab, trOf("free")+`.querySelector('button.rowpause').click(), true`)
	waitFor(t, tab, "the notice hides", `document.getElementById('notice').hidden`)
	if o, _ := g.e.GroupOverride("free"); o.Paused == nil || !*o.Paused {
		t.Errorf("free's override is %+v, want paused", o)
	}
}

// A write's answer that comes after the operator opened another group's
// panel leaves that panel alone: no "Override applied." for it, and an
// evict does not close it.
func TestALateWriteAnswerLeavesTheNextGroupsPanelAlone(t *testing.T) {
	arrived, release := make(chan string, 1), make(chan struct{})
	hold := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				arrived <- r.Method
				<-release
			}
			h.ServeHTTP(w, r)
		})
	}
	g := newGroups(t, []string{"A", "B"}, httpgc.Options{AllowWrites: true, Authorize: allowAll}, hold)
	t.Cleanup(func() { close(release) }) // before the server closes: cleanups run last first
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(g.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the rows show", trOf("A")+` !== undefined && `+trOf("B")+` !== undefined`)
	// window.__answered counts the writes whose answer the page has acted
	// on: a timer set when the answer comes runs after what awaits it.
	eval[bool](t, tab, `(() => {
		window.confirm = () => true;
		window.__answered = 0;
		const f = window.fetch;
		window.fetch = (url, o) => f(url, o).then((r) => { if (o && o.method) setTimeout(() => window.__answered++, 0); return r; });
		return true;
	})()`)
	open := func(key string) {
		t.Helper()
		eval[bool](t, tab, trOf(key)+`.click(), true`)
		waitFor(t, tab, key+"'s panel shows", `document.getElementById('detail-title').textContent === `+jsq(key)+
			` && !document.getElementById('detail').hidden && document.querySelectorAll('#explain tbody tr').length === 4`)
	}
	await := func(what string) {
		t.Helper()
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			t.Fatalf("the %s never reached the server", what)
		}
	}
	check := func(after string, n int) {
		t.Helper()
		release <- struct{}{}
		waitFor(t, tab, "the page has the answer of the "+after, fmt.Sprintf(`window.__answered === %d`, n))
		if eval[bool](t, tab, `document.getElementById('detail').hidden`) {
			t.Errorf("after the %s of A, B's panel is closed", after)
		}
		if msg := eval[string](t, tab, `document.getElementById('message').textContent`); msg != "" {
			t.Errorf("after the %s of A, B's panel says %q", after, msg)
		}
	}

	open("A")
	eval[bool](t, tab, `(() => { const f = document.getElementById('override'); f.elements.maxConcurrency.value = '9';
		f.dispatchEvent(new Event('input')); document.getElementById('apply').click(); return true })()`)
	await("override")
	open("B")
	check("override", 1)
	if o, _ := g.e.GroupOverride("A"); o.MaxConcurrency == nil || *o.MaxConcurrency != 9 {
		t.Errorf("A's override is %+v, want maxConcurrency 9", o)
	}

	open("A")
	eval[bool](t, tab, `document.getElementById('evict').click(), true`)
	await("evict")
	open("B")
	check("evict", 2)
	if _, ok := g.e.GroupStats("A"); ok {
		t.Error("A is still there after its evict")
	}
}

// A key whose escaped form is over the server's header limit (1 MB) cannot
// be named in a URL: net/http answers 431. Its row's button and its panel
// say so.
func TestAKeyTooLongForAURLSaysSoWhenWrittenTo(t *testing.T) {
	long := strings.Repeat("é", 200_000) // 400 KB, 1.2 MB escaped
	g := newGroups(t, []string{long, "short"}, httpgc.Options{AllowWrites: true, Authorize: allowAll, Interval: time.Second}, nil)
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(g.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the long key's row shows", trOf(long)+` !== undefined`)
	eval[bool](t, tab, trOf(long)+`.querySelector('button.rowpause').click(), true`)
	waitFor(t, tab, "the failure shows", `!document.getElementById('notice').hidden`)
	want := strings.Repeat("é", 80) + "…: pausing failed: 431 the group's name is too long for a URL"
	if got := eval[string](t, tab, `document.getElementById('notice').textContent`); got != want {
		t.Errorf("the notice says %q, want %q", got, want)
	}
	eval[bool](t, tab, trOf(long)+`.click(), true`)
	waitFor(t, tab, "the panel says why it is empty", `document.getElementById('message').textContent !== ''`)
	if got := eval[string](t, tab, `document.getElementById('message').textContent`); got != "Explain failed: 431" {
		t.Errorf("the panel says %q", got)
	}
}
