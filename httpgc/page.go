package httpgc

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"html/template"
	"net/http"
)

// The page is one HTML document with its style and script inline, so it
// needs no asset and no build step. A fresh nonce per response lets the
// CSP allow exactly those two and nothing else. The script is two files,
// view.js then page.js, run as one function so they share one scope.
var (
	//go:embed page.html
	pageHTML string
	//go:embed page.css
	pageCSS string
	//go:embed view.js
	viewJS string
	//go:embed page.js
	pageJS string
	script = "'use strict';\n(() => {\n" + viewJS + "\n" + pageJS + "})();\n"

	pageTemplate = template.Must(template.New("page").Parse(pageHTML))
)

type pageData struct {
	Nonce                  string
	CSS                    template.CSS
	JS                     template.JS
	IntervalMs             int64
	Rows                   int
	Writable               bool
	Patch, Evict, Shutdown bool
}

// page serves the dashboard. The write controls it shows are those Authorize
// grants this request. The server refuses the others anyway.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	nonce := make([]byte, 18)
	rand.Read(nonce)
	d := pageData{
		Nonce:      base64.RawURLEncoding.EncodeToString(nonce),
		CSS:        template.CSS(pageCSS),
		JS:         template.JS(script),
		IntervalMs: h.o.Interval.Milliseconds(),
		Rows:       h.o.Rows,
		Writable:   h.o.AllowWrites,
	}
	if h.o.AllowWrites {
		d.Patch = h.o.Authorize(r, ActionPatch)
		d.Evict = h.o.Authorize(r, ActionEvict)
		d.Shutdown = h.o.Authorize(r, ActionShutdown)
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, d); err != nil {
		fail(w, http.StatusInternalServerError, "rendering the page failed")
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+d.Nonce+"'; style-src 'nonce-"+d.Nonce+
		"'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Frame-Options", "DENY")
	w.Write(b.Bytes())
}
