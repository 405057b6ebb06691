package browsertest_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// A group paused by its parent alone says whom to resume, and its row's
// button offers Pause, which is the group's own: Resume would start
// nothing.
func TestAChildOfAPausedParentSaysWhomToResume(t *testing.T) {
	g := newGroups(t, []string{"t/a", "t/b"}, httpgc.Options{AllowWrites: true, Authorize: func(*http.Request, httpgc.Action) bool { return true }}, nil)
	yes := true
	if err := g.e.SetGroupOverride("t", groupconc.GroupOverride{Paused: &yes}); err != nil {
		t.Fatal(err)
	}
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(g.url)); err != nil {
		t.Fatal(err)
	}
	button := func(key string) string { return trOf(key) + `.querySelector('button.rowpause')` }
	why := func(key string) string { return trOf(key) + `.querySelector('td.why .why-tag').textContent` }
	waitFor(t, tab, "the rows show paused", trOf("t/a")+` && `+trOf("t")+` && `+why("t/a")+` === 'paused by t'`)
	if got := eval[string](t, tab, button("t")+`.textContent`); got != "Resume" {
		t.Errorf("t's button says %q, want Resume", got)
	}
	if got := eval[string](t, tab, button("t/a")+`.textContent`); got != "Pause" {
		t.Errorf("t/a's button says %q, want Pause", got)
	}
	if got := eval[string](t, tab, why("t")); got != "paused" {
		t.Errorf("t's reason is %q, want paused", got)
	}

	// Its Pause pauses t/a itself, which then says so, and offers Resume.
	eval[bool](t, tab, button("t/a")+`.click(), true`)
	waitFor(t, tab, "t/a shows its own pause", why("t/a")+` === 'paused' && `+button("t/a")+`.textContent === 'Resume'`)
	if o, _ := g.e.GroupOverride("t/a"); o.Paused == nil || !*o.Paused {
		t.Errorf("t/a's override is %+v, want paused", o)
	}
	if o, _ := g.e.GroupOverride("t/b"); o.Paused != nil {
		t.Errorf("t/b's override is %+v, want none", o)
	}
}
