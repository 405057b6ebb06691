package browsertest_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/kobe/groupconc/httpgc"
)

// row is the JavaScript expression for the table's row of group key.
func row(key string) string {
	return `document.querySelector('#groups tbody tr[data-group=` + strconv.Quote(key) + `]')`
}

// clickRow clicks the row of key from the page's own script. The stream
// redraws the table every second, so a node that chromedp looked up first
// may be gone by its click.
func clickRow(t *testing.T, tab context.Context, key string) {
	t.Helper()
	eval[bool](t, tab, row(key)+`.click(), true`)
}

func TestAGroupWhoseKeyAPathWouldMangleOpensAndTakesAnOverride(t *testing.T) {
	s := newService(t, httpgc.Options{AllowWrites: true, Authorize: func(*http.Request, httpgc.Action) bool { return true }})
	keys := []string{"..", ".", "a/b ü", "%2F?#"}
	for i, key := range keys {
		s.submit(context.Background(), key, i, func(ctx context.Context) (struct{}, error) {
			select {
			case <-s.hang:
			case <-ctx.Done():
			}
			return struct{}{}, nil
		})
	}
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url)); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		waitFor(t, tab, "the row of "+strconv.Quote(key)+" shows", row(key)+` !== null`)
		clickRow(t, tab, key)
		// The form shows the group's overrides (none) once its explain loads.
		waitFor(t, tab, "the explain stack of "+strconv.Quote(key)+" shows",
			`document.getElementById('detail-title').textContent === `+strconv.Quote(key)+
				` && document.querySelectorAll('#explain tbody tr').length === 4`+
				` && document.querySelector('#override input[name="maxConcurrency"]').value === ''`)
		if err := chromedp.Do(tab,
			chromedp.SendKeys(chromedp.CSS(`#override input[name="maxConcurrency"]`), "5"),
			chromedp.Click(chromedp.ID("apply")),
		); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tab, "the override of "+strconv.Quote(key)+" is applied",
			`document.getElementById('message').textContent === 'Override applied.'`)
		if st, ok := s.e.GroupStats(key); !ok || st.MaxConcurrency != 5 {
			t.Errorf("group %q: MaxConcurrency %d (known %v), want 5", key, st.MaxConcurrency, ok)
		}
		if msg := eval[string](t, tab, `document.getElementById('message').textContent`); msg != "Override applied." {
			t.Errorf("group %q: the panel says %q", key, msg)
		}
	}
}

func TestAPageThatRebindsItsNameToLoopbackGetsNothing(t *testing.T) {
	// The dashboard's setup: writes for any local client.
	s := newService(t, httpgc.Options{AllowWrites: true, Authorize: func(r *http.Request, _ httpgc.Action) bool {
		return strings.HasPrefix(r.RemoteAddr, "127.0.0.1:")
	}})
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	// The attacker's name resolves to 127.0.0.1, as after a rebinding.
	tab := browser(t, chromedp.Flag("host-resolver-rules", "MAP attacker.example 127.0.0.1"))
	evil := "http://attacker.example:" + u.Port() + u.Path
	if err := chromedp.Do(tab, chromedp.Navigate(evil)); err != nil {
		t.Fatal(err)
	}
	body := eval[string](t, tab, `document.body.textContent`)
	if !strings.Contains(body, `host \"attacker.example:`+u.Port()+`\"`) {
		t.Errorf("the rebound page shows %q, want a refusal naming the host", body)
	}
	// A script on that page, same-origin as far as the browser knows.
	for _, req := range []string{
		`fetch('api/stats').then(r => r.status)`,
		`fetch('api/events').then(r => r.status)`,
		`fetch('api/group/shutdown?group=hooli', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'}).then(r => r.status)`,
		`fetch('api/groups/acme', {method: 'PATCH', headers: {'Content-Type': 'application/json'},
			body: JSON.stringify({maxConcurrency: 1})}).then(r => r.status)`,
	} {
		if status := eval[int](t, tab, req, chromedp.EvalAwaitPromise); status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", req, status)
		}
	}
	if st, _ := s.e.GroupStats("acme"); st.MaxConcurrency != 8 {
		t.Errorf("acme's MaxConcurrency is %d after the rebound page, want 8", st.MaxConcurrency)
	}
	if n := s.e.Stats().Cancelled; n != 0 {
		t.Errorf("%d tasks cancelled after the rebound page, want 0", n)
	}

	// The same page at the real address works.
	if err := chromedp.Do(tab, chromedp.Navigate(s.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the table fills from the stream", row("acme")+` !== null && document.getElementById('conn').textContent === 'live'`)
}
