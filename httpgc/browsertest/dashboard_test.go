package browsertest_test

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kobe/groupconc/httpgc"
)

var (
	writeDocs = flag.Bool("docs", os.Getenv("GROUPCONC_DOCS_SCREENSHOT") != "",
		"also write the screenshot of a hung group and a busy one to docs/dashboard.png (or set GROUPCONC_DOCS_SCREENSHOT=1)")
	screenshotTo = flag.String("screenshot", "", "also write the screenshot of a hung group and a busy one to this PNG file")
)

// browser returns a tab of a headless Chromium, closed at the test's end,
// started with the extra options given. Without Chromium the test skips,
// or fails when CI=true.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium-headless-shell", "chromium", "headless_shell", "headless-shell", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		msg := "no Chromium found (Debian: apt-get install chromium-headless-shell)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1440, 900),
	)
	opts = append(opts, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancel()
	})
	return tab
}

// waitFor polls a JavaScript expression in the page until it is true.
func waitFor(t *testing.T, tab context.Context, what, expr string) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting until %s (%s): %v", what, expr, err)
	}
}

func eval[T any](t *testing.T, tab context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// screenshot saves the whole page as a PNG in a temporary directory, and
// at also too unless it is "".
func screenshot(t *testing.T, tab context.Context, also string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(t.TempDir(), "dashboard.png")}
	if also != "" {
		paths = append(paths, also)
	}
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", p, len(png))
	}
}

const (
	acmeRow   = `document.querySelector('#groups tbody tr[data-group="acme"]')`
	acmeBadge = acmeRow + `.querySelector('td:nth-child(3) .src').textContent`
)

func TestTheTableFillsFromTheStreamAndTheFormChangesALimit(t *testing.T) {
	s := newService(t, httpgc.Options{AllowWrites: true, Authorize: func(*http.Request, httpgc.Action) bool { return true }})
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the table fills from the stream",
		acmeRow+` !== null && document.getElementById('conn').textContent === 'live'`)
	if got := eval[string](t, tab, acmeBadge); got != "group" {
		t.Errorf("acme's concurrency badge is %q, want group", got)
	}
	if got := eval[string](t, tab, `document.getElementById('access').textContent`); got != "writes allowed" {
		t.Errorf("the access badge is %q, want writes allowed", got)
	}

	clickRow(t, tab, "acme")
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.ID("override"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the explain stack shows", `document.querySelectorAll('#explain tbody tr').length === 4`)
	if err := chromedp.Do(tab,
		chromedp.SendKeys(chromedp.CSS(`#override input[name="maxConcurrency"]`), "5"),
		chromedp.Click(chromedp.ID("apply")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "acme's badge turns override", acmeBadge+` === 'override'`)
	st, ok := s.e.GroupStats("acme")
	if !ok || st.MaxConcurrency != 5 {
		t.Errorf("acme's GroupStats: MaxConcurrency %d (known %v), want 5", st.MaxConcurrency, ok)
	}
	if got := eval[string](t, tab, `document.getElementById('message').textContent`); got != "Override applied." {
		t.Errorf("the panel's message is %q, want Override applied.", got)
	}

	waitFor(t, tab, "pressure warnings show", `document.querySelectorAll('#warnings tbody tr').length > 0`)
	screenshot(t, tab, "")
}

func TestAReadOnlyDashboardHasNoFormAndRefusesAPatch(t *testing.T) {
	s := newService(t, httpgc.Options{})
	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the table fills", acmeRow+` !== null`)
	clickRow(t, tab, "acme")
	waitFor(t, tab, "the explain stack shows", `document.querySelectorAll('#explain tbody tr').length === 4`)
	if got := eval[bool](t, tab, `document.getElementById('override') === null && document.getElementById('evict') === null`); !got {
		t.Error("a read-only dashboard shows the override form or the evict button")
	}
	if got := eval[string](t, tab, `document.getElementById('access').textContent`); got != "read-only" {
		t.Errorf("the access badge is %q, want read-only", got)
	}
	status := eval[int](t, tab, `fetch('api/groups/acme', {method: 'PATCH', headers: {'Content-Type': 'application/json'},
		body: JSON.stringify({maxConcurrency: 1})}).then(r => r.status)`, chromedp.EvalAwaitPromise)
	if status != http.StatusMethodNotAllowed {
		t.Errorf("a scripted PATCH got %d, want 405", status)
	}
	if st, _ := s.e.GroupStats("acme"); st.MaxConcurrency != 8 {
		t.Errorf("acme's MaxConcurrency is %d after a refused PATCH, want 8", st.MaxConcurrency)
	}
	screenshot(t, tab, "")

	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("pause"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "pausing stops the stream", `document.getElementById('conn').textContent === 'updates paused' &&
		document.getElementById('pause').textContent === 'Resume updates'`)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("pause"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "resuming opens it again", `document.getElementById('conn').textContent === 'live'`)
}

func TestThePagePollsWhenTheStreamIsRefused(t *testing.T) {
	s := newService(t, httpgc.Options{MaxClients: 1})
	// Take the only stream, so the page's EventSource gets 503.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the first stream got %d, want 200", resp.StatusCode)
	}

	tab := browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the table fills by polling",
		acmeRow+` !== null && document.getElementById('conn').textContent === 'polling'`)
}
