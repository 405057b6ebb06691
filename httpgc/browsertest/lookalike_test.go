package browsertest_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/kobe/groupconc/httpgc"
)

// nameOf is the JavaScript expression for the name element of key's row.
func nameOf(key string) string { return trOf(key) + `.querySelector('td.key .name')` }

// Keys that differ only in invisible characters look different, a key's
// bidi controls reorder nothing outside it, and the row's button of a key
// that looks like another's writes to that key only.
func TestKeysThatLookAlikeShowApartAndAreWrittenToExactly(t *testing.T) {
	const rlo = "x\u202eyz" // RIGHT-TO-LEFT OVERRIDE
	shown := map[string]string{
		"acme":                "acme",
		"acme\u200b":          `acme\u200b`,
		" acme":               `\u0020acme`,
		"a  b":                `a\u0020\u0020b`,
		"a b":                 "a b",
		"a\u00a0b":            `a\u00a0b`,
		"tab\there":           `tab\there`,
		`back\slash`:          `back\\slash`,
		"\ufeffbom":           `\ufeffbom`,
		"soft\u00adhyphen":    `soft\u00adhyphen`,
		"line\u2028sep":       `line\u2028sep`,
		"\u0430cme":           `\u0430cme`, // a Cyrillic а in a Latin word
		"алиса":               "алиса",     // a Cyrillic word alone stays
		"tag\U000e0041":       `tag\U000e0041`,
		"iso\u2066late\u2069": `iso\u2066late\u2069`,
		rlo:                   `x\u202eyz`,
	}
	var keys []string
	for k := range shown {
		keys = append(keys, k)
	}
	keys = append(keys, rlo+"/c") // so that rlo's row shows its count of children
	// Writes to rlo are refused, so that its failure shows in the notice.
	auth := func(r *http.Request, _ httpgc.Action) bool { return r.URL.Query().Get("group") != rlo }
	g := newGroups(t, keys, httpgc.Options{AllowWrites: true, Authorize: auth}, nil)
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(g.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "every row shows", `document.getElementById('conn').textContent === 'live' && `+
		fmt.Sprint(`document.querySelectorAll('#groups tbody tr').length === `, len(keys)))

	// (a) Each key shows as its escaped form, and "acme" and "acme\u200b"
	// neither read nor measure the same.
	for key, want := range shown {
		if got := eval[string](t, tab, nameOf(key)+`.textContent`); got != want {
			t.Errorf("the row of %+q shows %+q, want %+q", key, got, want)
		}
	}
	if a, b := eval[float64](t, tab, nameOf("acme")+`.getBoundingClientRect().width`),
		eval[float64](t, tab, nameOf("acme\u200b")+`.getBoundingClientRect().width`); b <= a {
		t.Errorf(`"acme\u200b" is drawn %.1f px wide, no wider than "acme" (%.1f px)`, b, a)
	}
	if n := eval[int](t, tab, nameOf("acme\u200b")+`.querySelectorAll('.esc').length`); n != 1 {
		t.Errorf(`"acme\u200b"'s escape is in %d elements of class esc, want 1`, n)
	}
	if title := eval[string](t, tab, trOf("acme\u200b")+`.querySelector('td.key').title`); title != "\u2068acme\\u200b\u2069" {
		t.Errorf(`the title of "acme\u200b"'s cell is %+q`, title)
	}

	// (b) The name is isolated, and the count of children after it reads
	// left to right, to its right.
	if ub := eval[string](t, tab, `getComputedStyle(`+nameOf(rlo)+`).unicodeBidi`); ub != "isolate" {
		t.Errorf("the name's unicode-bidi is %q, want isolate", ub)
	}
	if got := eval[string](t, tab, trOf(rlo)+`.querySelector('td.key .kids').textContent`); got != "(1)" {
		t.Errorf("the count of children says %q", got)
	}
	if !eval[bool](t, tab, `(() => { const tr = `+trOf(rlo)+`;
		return tr.querySelector('.kids').getBoundingClientRect().left >= tr.querySelector('.name').getBoundingClientRect().right; })()`) {
		t.Error("the count of children is not right of the name")
	}
	// A refused pause names the key in the notice: the words after it keep
	// their order ("p" of "pausing" left of its "g").
	eval[bool](t, tab, trOf(rlo)+`.querySelector('button.rowpause').click(), true`)
	waitFor(t, tab, "the failure shows", `!document.getElementById('notice').hidden`)
	if got := eval[string](t, tab, `document.getElementById('notice').textContent`); got != `x\u202eyz: pausing failed: 403 forbidden: not authorized to patch` {
		t.Errorf("the notice says %+q", got)
	}
	if order := eval[string](t, tab, `(() => {
		const n = document.getElementById('notice'), w = document.createTreeWalker(n, NodeFilter.SHOW_TEXT);
		for (let t; (t = w.nextNode());) {
			const i = t.data.indexOf('pausing');
			if (i < 0) continue;
			const at = (j) => { const r = document.createRange(); r.setStart(t, j); r.setEnd(t, j + 1); return r.getBoundingClientRect().left; };
			return at(i) < at(i + 6) ? '' : 'p at ' + at(i) + ', g at ' + at(i + 6);
		}
		return 'no "pausing"';
	})()`); order != "" {
		t.Errorf("the notice's words after the key are reordered: %s", order)
	}
	// Its panel's title too.
	eval[bool](t, tab, trOf(rlo)+`.click(), true`)
	waitFor(t, tab, "the panel shows", `!document.getElementById('detail').hidden`)
	if got := eval[string](t, tab, `document.getElementById('detail-title').textContent`); got != `x\u202eyz` {
		t.Errorf("the panel's title is %+q", got)
	}
	eval[bool](t, tab, `document.getElementById('detail-close').click(), true`)

	// (c) The row's button of "acme\u200b" pauses that group, not "acme".
	eval[bool](t, tab, trOf("acme\u200b")+`.querySelector('button.rowpause').click(), true`)
	waitFor(t, tab, `"acme\u200b"'s row says paused`, trOf("acme\u200b")+`.querySelector('td.key .badge.paused') != null`)
	if o, _ := g.e.GroupOverride("acme\u200b"); o.Paused == nil || !*o.Paused {
		t.Errorf(`"acme\u200b"'s override is %+v, want paused`, o)
	}
	if o, _ := g.e.GroupOverride("acme"); o.Paused != nil {
		t.Errorf(`"acme"'s override is %+v, want none`, o)
	}
	if eval[bool](t, tab, trOf("acme")+`.querySelector('td.key .badge.paused') != null`) {
		t.Error(`"acme"'s row says paused`)
	}
}
