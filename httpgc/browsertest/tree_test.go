package browsertest_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// shownOrder is the JavaScript expression for the groups of the rows the
// table shows, top to bottom, joined by spaces.
const shownOrder = `[...document.querySelectorAll('#groups tbody tr')].filter((tr) => !tr.hidden).map((tr) => tr.dataset.group).join(' ')`

// indent is the JavaScript expression for the left padding of key's name.
func indent(key string) string {
	return `parseFloat(getComputedStyle(` + row(key) + `.querySelector('td.key')).paddingLeft)`
}

func TestATenantsUsersShowUnderItWhenOpenedAndStayOpenAcrossUpdates(t *testing.T) {
	policy, err := groupconc.NewPolicyBuilder().
		ParentSeparator("/").
		DefaultMaxConcurrencyPerGroup(2).
		GlobalMaxInFlight(64).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	e := groupconc.New(policy)
	started := make(chan struct{}, 16)
	var gates []chan struct{}
	submit := func(key string) chan struct{} {
		gate := make(chan struct{})
		gates = append(gates, gate)
		_, err := groupconc.Submit(context.Background(), e, key, fmt.Sprint(key, len(gates)), func(ctx context.Context) (int, error) {
			started <- struct{}{}
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return gate
	}
	// acme is full (alice 1, carl 1), and bob has waited longest. globex
	// is full too (carol 2), and dan waits, since later. initech and
	// solo run one task each.
	first := submit("acme/alice")
	submit("acme/carl")
	submit("acme/bob")
	// bob's wait must stay longer than dan's while the two are read one
	// after the other. So dan comes once bob has waited 300 ms.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for st, _ := e.GroupStats("acme"); st.OldestWait < 300*time.Millisecond; st, _ = e.GroupStats("acme") {
		<-tick.C
	}
	submit("globex/carol")
	submit("globex/carol")
	submit("globex/dan")
	submit("initech/erin")
	submit("solo")
	for range 6 {
		<-started
	}

	h, err := httpgc.New(e, httpgc.Options{Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		for _, g := range gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
		h.Close()
		srv.Close()
		e.Close()
	})
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}

	// Tenants sort by their subtree's oldest wait, and start closed.
	waitFor(t, tab, "the tenants show, closed", row("acme/alice")+` !== null && `+row("solo")+` !== null`)
	if got := eval[string](t, tab, shownOrder); got != "acme globex initech solo" {
		t.Errorf("the rows shown are %q, want acme globex initech solo", got)
	}
	if !eval[bool](t, tab, row("acme/alice")+`.hidden && `+row("acme/bob")+`.hidden && `+row("globex/dan")+`.hidden`) {
		t.Error("a closed tenant's users show")
	}
	if eval[string](t, tab, row("acme")+`.querySelector('button.twisty').getAttribute('aria-expanded')`) != "false" {
		t.Error("acme's disclosure button does not say closed")
	}
	if eval[bool](t, tab, row("solo")+`.querySelector('button.twisty') !== null`) {
		t.Error("solo, with no children, has a disclosure button")
	}

	// Opened, acme shows its users under it, indented, bob (waiting) first.
	eval[bool](t, tab, row("acme")+`.querySelector('button.twisty').click(), true`)
	waitFor(t, tab, "acme's users show", `!`+row("acme/bob")+`.hidden`)
	if got := eval[string](t, tab, shownOrder); got != "acme acme/bob acme/alice acme/carl globex initech solo" {
		t.Errorf("the rows shown are %q, want acme's users under it", got)
	}
	if in, out := eval[float64](t, tab, indent("acme/bob")), eval[float64](t, tab, indent("acme")); in <= out {
		t.Errorf("acme/bob's name is indented %v px, acme's %v px: want it further in", in, out)
	}
	if got := eval[string](t, tab, whyOf("acme/bob")); got != "parent limit: acme" {
		t.Errorf("acme/bob's why is %q, want parent limit: acme", got)
	}
	if detail := eval[bool](t, tab, `!document.getElementById('detail').hidden`); detail {
		t.Error("opening a tenant selects it")
	}

	// alice's task ends, so bob's runs: acme waits no more and drops
	// below globex. An update redraws the table, and acme stays open.
	close(first)
	waitFor(t, tab, "acme drops below globex", shownOrder+` === 'globex acme acme/bob acme/carl initech solo'`)
	if !eval[bool](t, tab, row("globex/dan")+`.hidden`) {
		t.Error("globex opened by itself")
	}
	mark := strconv.Quote("before")
	eval[bool](t, tab, row("acme")+`.dataset.mark = `+mark+`, true`)
	waitFor(t, tab, "the next update redraws the rows", row("acme")+` !== null && `+row("acme")+`.dataset.mark === undefined`)
	if got := eval[string](t, tab, shownOrder); got != "globex acme acme/bob acme/carl initech solo" {
		t.Errorf("after an update the rows shown are %q, want acme still open", got)
	}

	screenshot(t, tab, "")

	// Closed again, acme's users hide.
	eval[bool](t, tab, row("acme")+`.querySelector('button.twisty').click(), true`)
	waitFor(t, tab, "acme's users hide", row("acme/bob")+`.hidden`)

	// A prefix filter shows its matches under their parents, opened.
	eval[bool](t, tab, `(() => { const p = document.getElementById('prefix'); p.value = 'acme/b'; p.dispatchEvent(new Event('input')); return true })()`)
	waitFor(t, tab, "the filter shows acme/bob under acme", shownOrder+` === 'acme acme/bob'`)
	if got := eval[string](t, tab, `document.getElementById('shown').textContent`); got != "1 group, 2 shown" {
		t.Errorf("with the filter, the count says %q, want 1 group, 2 shown", got)
	}
}
