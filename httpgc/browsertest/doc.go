// Package browsertest drives httpgc's dashboard in a headless Chromium
// (through chromedp) against a live executor. The page loads, the table
// fills from the stream, and a limit changed through the form reaches the
// executor, for a group named ".." too. A read-only dashboard offers no
// form and refuses writes. A page whose name resolves to 127.0.0.1, as
// after DNS rebinding, is refused. Each row gives its reason to wait (own
// limit, global cap, paused, running long), a hung group is told from a
// busy one, a row's button pauses and resumes its group, the sparklines
// are full on load, and the warnings are summed up at the top.
// It is a module of its own so that the root module never depends on
// chromedp.
//
// The tests need Chromium (Debian: chromium-headless-shell or chromium).
// Without one they skip, or fail when CI=true. Each saves a screenshot in
// a temporary directory. With -docs (or GROUPCONC_DOCS_SCREENSHOT=1) the
// one of a hung group and a busy one also goes to docs/dashboard.png, and
// with -screenshot PATH to PATH.
package browsertest
