// Package browsertest drives httpgc's dashboard in a headless Chromium
// (through chromedp) against a live executor. The page loads, the table
// fills from the stream, and a limit changed through the form reaches the
// executor, for a group named ".." too. A read-only dashboard offers no
// form and refuses writes. A page whose name resolves to 127.0.0.1, as
// after DNS rebinding, is refused.
// It is a module of its own so that the root module never depends on
// chromedp.
//
// The tests need Chromium (Debian: chromium-headless-shell or chromium).
// Without one they skip, or fail when CI=true. Each saves a screenshot in
// a temporary directory; with -docs (or GROUPCONC_DOCS_SCREENSHOT=1) the
// one of the writable dashboard also goes to docs/dashboard.png.
package browsertest
