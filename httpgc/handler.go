package httpgc

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kobe/groupconc"
)

// Handler serves an executor's dashboard and admin API. See the package
// documentation for its routes. Create it with New, since the zero value is
// not usable. It is safe for concurrent use.
//
// The handler starts one goroutine, the stream's producer, when the first
// stream client connects. It stops it when the last one leaves, so with no
// one watching it runs nothing. Close ends every stream.
type Handler struct {
	e        *groupconc.GroupExecutor
	o        Options
	hosts    hosts // the Host names served besides loopback
	mux      *http.ServeMux
	csrf     *http.CrossOriginProtection
	writes   sync.Mutex // serialises writes, so two patches never lose each other's fields
	warnings ring
	stream   stream
	history  history
	// writeRoutes maps each write route's pattern to its Action, for Audit.
	writeRoutes map[string]Action
	// unwatch stops the handler being told e's pressure warnings.
	unwatch func()
}

// New returns a handler showing e, configured by opts. The handler watches
// e's pressure warnings (GroupExecutor.WatchPressure) for the page's list,
// until Close. So a policy needs no function that forwards them. Close a
// handler you are done with. Until then its history's timer keeps it, and
// e, in memory, also once e is closed. It returns an error for a nil e,
// for AllowWrites without Authorize, and for an option out of range,
// naming it.
func New(e *groupconc.GroupExecutor, opts Options) (*Handler, error) {
	if e == nil {
		return nil, errors.New("httpgc: New: nil *groupconc.GroupExecutor")
	}
	o, allowed, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Handler{e: e, o: o, hosts: allowed, mux: http.NewServeMux(), csrf: http.NewCrossOriginProtection()}
	h.warnings.buf = make([]warningJSON, o.Warnings)
	h.stream.init()
	h.startHistory()

	h.mux.Handle("GET /{$}", h.read(h.page))
	h.mux.Handle("GET /api/stats", h.readAPI(h.getStats))
	h.mux.Handle("GET /api/groups", h.readAPI(h.getGroups))
	h.mux.Handle("GET /api/groups/{group}", h.readAPI(h.getGroup))
	h.mux.Handle("GET /api/groups/{group}/explain", h.readAPI(h.getExplain))
	h.mux.Handle("GET /api/warnings", h.readAPI(h.getWarnings))
	h.mux.Handle("GET /api/events", h.readAPI(h.events))
	h.writeRoutes = map[string]Action{}
	for _, wr := range []struct {
		pattern string
		a       Action
		fn      func(http.ResponseWriter, *http.Request, []byte)
	}{
		{"PATCH /api/groups/{group}", ActionPatch, h.patch},
		{"POST /api/groups/{group}/evict", ActionEvict, h.evict},
		{"POST /api/groups/{group}/shutdown", ActionShutdown, h.shutdown},
		// The same routes with the name in the query reach any key, "." too.
		{"PATCH /api/group", ActionPatch, h.patch},
		{"POST /api/group/evict", ActionEvict, h.evict},
		{"POST /api/group/shutdown", ActionShutdown, h.shutdown},
	} {
		h.mux.Handle(wr.pattern, h.write(wr.a, wr.fn))
		h.writeRoutes[wr.pattern] = wr.a
	}
	h.mux.Handle("GET /api/group", h.readAPI(h.getGroup))
	h.mux.Handle("GET /api/group/explain", h.readAPI(h.getExplain))
	h.unwatch = e.WatchPressure(h.PressureWarning)
	return h, nil
}

// ServeHTTP serves r. A request whose Host is neither loopback nor in
// Options.AllowedHosts gets 403 before anything else is looked at. So does
// one from an address that is not loopback, without Options.Authorize.
// Then a path that is not clean (see cleanPath) gets 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if aw, a := h.watchWrite(w, r); aw != nil {
		defer h.audited(aw, r, a)
		w = aw
	}
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	if !h.hosts.allows(r.Host) {
		fail(w, http.StatusForbidden, "forbidden: host "+quoted(r.Host)+" is neither loopback nor in Options.AllowedHosts")
		return
	}
	if h.o.Authorize == nil && !loopback(r.RemoteAddr) {
		fail(w, http.StatusForbidden, "forbidden: only loopback clients are served without Options.Authorize")
		return
	}
	// The mux would redirect a path that is not clean to the clean one,
	// repeating the path and query in Location, and past a StripPrefix
	// mount point. So that path gets 404 here.
	if !cleanPath(r.URL.EscapedPath()) {
		fail(w, http.StatusNotFound, `not found: a path must start with "/" and have no "//", "." or ".." segment`)
		return
	}
	if mh, pattern := h.mux.Handler(r); pattern == "" {
		h.unrouted(w, r, mh)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// unrouted answers a request no route takes, as the mux's handler mh
// would (404, or 405 with Allow), with an error in JSON as every other
// answer of the API has, so the page can show it.
func (h *Handler) unrouted(w http.ResponseWriter, r *http.Request, mh http.Handler) {
	c := &statusOnly{header: http.Header{}}
	mh.ServeHTTP(c, r)
	if allow := c.header.Get("Allow"); c.code == http.StatusMethodNotAllowed && allow != "" {
		w.Header().Set("Allow", allow)
		fail(w, c.code, "method "+quoted(r.Method)+" not allowed here: allowed "+allow)
		return
	}
	fail(w, http.StatusNotFound, "not found: no endpoint "+quoted(r.URL.Path))
}

// statusOnly is a ResponseWriter that keeps the status and header alone.
type statusOnly struct {
	header http.Header
	code   int
}

func (c *statusOnly) Header() http.Header { return c.header }

func (c *statusOnly) Write(p []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return len(p), nil
}

func (c *statusOnly) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

// cleanPath reports whether p, an escaped path, is as http.ServeMux
// cleans it: rooted, with no "." or ".." segment and no "//". It may end
// in "/". Like the mux, it looks at the escaped path, so a key escaped as
// one segment, "..%2Fa" or "%2E", stays data.
func cleanPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	c := path.Clean(p)
	if c != "/" && strings.HasSuffix(p, "/") {
		c += "/"
	}
	return c == p
}

// read guards a read. It writes 403 unless r is authorized for ActionRead.
func (h *Handler) read(fn http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.allowed(w, r, ActionRead) {
			fn(w, r)
		}
	})
}

// readAPI guards a read of the API. First it writes 403 to a request that
// another origin's page made (see crossOrigin). Such a page could never
// read the answer, since none carries CORS headers. So refusing it loses
// nothing, and it saves the work: a stream slot (MaxClients), which a
// hostile page could otherwise hold until the operator's page gets 503,
// or a pass over every group. The page itself (GET /) is not guarded, so
// a link from another site still opens the dashboard.
func (h *Handler) readAPI(fn http.HandlerFunc) http.Handler {
	guarded := h.read(fn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := h.crossOrigin(r); why != "" {
			fail(w, http.StatusForbidden, "forbidden: another origin's page may not read the API: "+why)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// crossOrigin says why r comes from another origin's page, or returns ""
// if it does not. It asks http.CrossOriginProtection, as a write does. A
// request with neither Sec-Fetch-Site nor Origin passes: it is no
// browser's (curl, a Go client), and Authorize still decides.
func (h *Handler) crossOrigin(r *http.Request) string {
	asWrite := *r // Check passes every GET, so judge r as a write
	asWrite.Method = http.MethodPost
	if h.csrf.Check(&asWrite) == nil {
		return ""
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return "Sec-Fetch-Site " + quoted(site) + ", want same-origin or none"
	}
	return "Origin " + quoted(r.Header.Get("Origin")) + " is not Host " + quoted(r.Host)
}

// allowed reports whether Authorize, if set, lets r perform a. If not, it
// writes 403.
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request, a Action) bool {
	if h.o.Authorize != nil && !h.o.Authorize(r, a) {
		fail(w, http.StatusForbidden, "forbidden: not authorized to "+a.String())
		return false
	}
	return true
}

// write guards a write. It writes 405 unless AllowWrites, 403 cross-origin,
// and 403 unless authorized for a. Then it writes 415 without a JSON content
// type. The body, at most 64 KiB (413 beyond), goes to fn.
func (h *Handler) write(a Action, fn func(http.ResponseWriter, *http.Request, []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.o.AllowWrites {
			allow := ""
			if a == ActionPatch {
				allow = "GET, HEAD" // the group's row is still there to read
			}
			w.Header().Set("Allow", allow)
			fail(w, http.StatusMethodNotAllowed, "read-only: writes are off (Options.AllowWrites)")
			return
		}
		if h.crossOrigin(r) != "" {
			fail(w, http.StatusForbidden, "forbidden: cross-origin write")
			return
		}
		if !h.allowed(w, r, a) {
			return
		}
		if !isJSON(r.Header.Get("Content-Type")) {
			fail(w, http.StatusUnsupportedMediaType, "unsupported media type: a write needs Content-Type: application/json")
			return
		}
		body, err := readBody(w, r)
		if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
			fail(w, http.StatusRequestEntityTooLarge, "request body over 64 KiB")
			return
		} else if err != nil {
			fail(w, http.StatusBadRequest, "reading the request body: "+err.Error())
			return
		}
		fn(w, r, body)
	})
}

// lookup finds the group r's URL names by its displayed name, and returns
// that name. It writes 400 for no name, 404 for no such group, and 409
// when two groups share the displayed name. With a DisplayKey every group
// is looked at, by a read as by a write: a group of that name that is not
// shown (idle, or past Rows) makes it ambiguous too. Without a DisplayKey
// the name is the key, unless it has a U+FFFD, which may stand for a byte
// that is not UTF-8 (see display). Then every group is looked at too. A
// name that is not valid UTF-8 is shown for no group, so it is a key.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) (groupconc.GroupStats, string, bool) {
	name, ok := groupName(r)
	if !ok {
		fail(w, http.StatusBadRequest, "no group named: want api/group?group=NAME")
		return groupconc.GroupStats{}, name, false
	}
	// ContainsRune finds a byte that is not UTF-8 as a U+FFFD too.
	if h.o.DisplayKey == nil && (!strings.ContainsRune(name, utf8.RuneError) || !utf8.ValidString(name)) {
		st, ok := h.e.GroupStats(name)
		if !ok {
			fail(w, http.StatusNotFound, "no group "+quoted(name))
		}
		return st, h.display(name), ok
	}
	var found groupconc.GroupStats
	n := 0
	for st := range h.e.AllGroupStats() {
		if h.display(st.GroupKey) == name {
			found = st
			n++
		}
	}
	switch n {
	case 0:
		fail(w, http.StatusNotFound, "no group "+quoted(name))
		return found, name, false
	case 1:
		return found, name, true
	}
	fail(w, http.StatusConflict, "more than one group is shown as "+quoted(name))
	return found, name, false
}

// groupName returns the name r's URL gives a group. That is the path's
// {group}, or the query's group parameter on the api/group routes. The query
// form reaches any key whose escaped form fits in the server's header limit
// (else net/http answers 431). A browser resolves a path segment "." or
// "..", even escaped, so the page uses the query form.
func groupName(r *http.Request) (string, bool) {
	if name := r.PathValue("group"); name != "" {
		return name, true
	}
	q := r.URL.Query()
	return q.Get("group"), q.Has("group")
}

// loopback reports whether addr, a RemoteAddr, is a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func reply(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the reply failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// fail answers an error, msg with its invisible characters escaped.
func fail(w http.ResponseWriter, status int, msg string) {
	msg = visible(msg)
	if aw, ok := w.(*auditWriter); ok {
		aw.msg = msg
	}
	reply(w, status, struct {
		Error string `json:"error"`
	}{msg})
}
