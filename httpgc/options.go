package httpgc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

// Options configures a Handler. The zero value is a read-only handler that
// serves loopback clients only.
type Options struct {
	// Authorize decides whether r may perform a. When nil, only requests
	// whose RemoteAddr is a loopback address are served (403 otherwise), and
	// every one of them may read. Behind a reverse proxy RemoteAddr is the
	// proxy's, so set Authorize there. X-Forwarded-For is never trusted.
	// When set, it is asked ActionRead for every read and the write's Action
	// for every write. When the page is served, it is asked each write
	// Action to decide which controls to show. The Host check (see
	// AllowedHosts) comes first, whatever Authorize would say.
	Authorize func(r *http.Request, a Action) bool

	// AllowedHosts are the names a request's Host header may carry besides
	// a loopback host (localhost, 127.0.0.0/8, [::1]). Any other Host gets
	// 403, so a page that rebinds its own name to 127.0.0.1 reads nothing.
	// Behind a reverse proxy that passes the Host on, list the proxy's
	// public name. An entry is a host name or IP address without a port.
	// It matches its host with any port or none, in any case, with or
	// without a trailing dot.
	AllowedHosts []string

	// AllowWrites lets the handler change the executor with a PATCH of a
	// group's limits, evict and shutdown. Without it every write gets 405.
	// New returns an error for AllowWrites without Authorize.
	AllowWrites bool

	// DisplayKey, if set, is applied to every group key the handler shows
	// (rows, warnings, the page). HashKey is one, for per-user or per-IP
	// keys. URLs then name groups by their displayed key. A refusal of a
	// write that names the group's key (an override guard's, say) shows
	// the displayed key there, where it quotes the key as %q does, whole or
	// cut short, or holds it as it is (keys of 8 bytes or more). It must be fast
	// and safe for concurrent use. It should map distinct keys apart,
	// because a displayed key that two groups share is refused for writes
	// (409).
	DisplayKey func(key string) string

	// Identify names who made a write, for Audit. A nil Identify uses the request's
	// RemoteAddr.
	Identify func(r *http.Request) string

	// Audit, if set, is told of every write, on the request's goroutine
	// after its answer. That is a write applied, one the executor refused,
	// and one the handler turned away before the executor saw it (read-only,
	// host, origin, Authorize, media type, size, body, unknown group). The
	// last kind has Refused set. A hostile page can send many such writes,
	// so Audit should be quick and may want to count rather than log them.
	Audit func(AuditEvent)

	// Interval is how often the stream sends a snapshot. The default is 1s,
	// and it is at least 100ms. A snapshot reads the stats of every active
	// group. That may take more than a tenth of Interval, with several
	// hundred thousand active groups. Then the stream waits nine times as long as it took, so that
	// it never takes more than a tenth of a CPU. Each snapshot says its
	// wait ("nextMs"), so the page polls only when one is late.
	Interval time.Duration

	// Heartbeat is how often the stream sends a comment line to keep proxies
	// from closing an idle connection. The default is 15s.
	Heartbeat time.Duration

	// Rows is how many groups a stream snapshot carries, those that have
	// waited longest first. Only groups with something going on are shown.
	// A shown group's ancestors are among them. The default is 100, and it
	// is at most 1000. The page asks for as many rows when it polls.
	Rows int

	// MaxClients bounds the streams open at once. Beyond it a stream request
	// gets 503, and the page then polls. The default is 32. Another
	// origin's page takes no slot. Its stream request gets 403.
	MaxClients int

	// Warnings is how many pressure warnings the handler keeps for the page.
	// The default is 100.
	Warnings int

	// History is how many samples of history the handler keeps, one per
	// Interval. It keeps them for the totals and for up to twice Rows
	// groups, those a snapshot shows. The default is 60, a minute at the
	// default Interval, and it is at most 600. A sample takes 48 bytes, so
	// the defaults keep about 600 KB. A negative History keeps none, and
	// then no row is told hung.
	History int

	// LongRun is how long a group's oldest running task may run before
	// its row says "running long". The default is 10s.
	LongRun time.Duration
}

const (
	defaultInterval   = time.Second
	minInterval       = 100 * time.Millisecond
	defaultHeartbeat  = 15 * time.Second
	defaultRows       = 100
	maxRows           = 1000
	defaultMaxClients = 32
	defaultWarnings   = 100
	defaultHistory    = 60
	maxHistory        = 600
	defaultLongRun    = 10 * time.Second
	maxBody           = 64 << 10
)

// withDefaults returns o with its zero fields set and the hosts it
// allows, or an error naming every bad field.
func (o Options) withDefaults() (Options, hosts, error) {
	allowed, bad := newHosts(o.AllowedHosts)
	if o.AllowWrites && o.Authorize == nil {
		bad = append(bad, "AllowWrites needs Authorize: writes are never open to every loopback client")
	}
	positive := func(name string, v *int, def, most int) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0 || (most > 0 && *v > most):
			bad = append(bad, fmt.Sprintf("%s is %d, want 0 (default %d) or 1 to %d", name, *v, def, most))
		}
	}
	positive("Rows", &o.Rows, defaultRows, maxRows)
	positive("MaxClients", &o.MaxClients, defaultMaxClients, 1<<16)
	positive("Warnings", &o.Warnings, defaultWarnings, 1<<16)
	if o.History >= 0 {
		positive("History", &o.History, defaultHistory, maxHistory)
	}
	switch {
	case o.LongRun == 0:
		o.LongRun = defaultLongRun
	case o.LongRun < 0:
		bad = append(bad, fmt.Sprintf("LongRun is %v, want 0 (default %v) or more", o.LongRun, defaultLongRun))
	}
	switch {
	case o.Interval == 0:
		o.Interval = defaultInterval
	case o.Interval < minInterval:
		bad = append(bad, fmt.Sprintf("Interval is %v, want 0 (default %v) or at least %v", o.Interval, defaultInterval, minInterval))
	}
	switch {
	case o.Heartbeat == 0:
		o.Heartbeat = defaultHeartbeat
	case o.Heartbeat < minInterval:
		bad = append(bad, fmt.Sprintf("Heartbeat is %v, want 0 (default %v) or at least %v", o.Heartbeat, defaultHeartbeat, minInterval))
	}
	if len(bad) > 0 {
		return o, nil, fmt.Errorf("httpgc: bad Options: %s", strings.Join(bad, "; "))
	}
	return o, allowed, nil
}

// Action is what a request asks to do, as Options.Authorize is asked.
type Action int

const (
	// ActionRead is every GET, for the page, stats, groups and the stream.
	ActionRead Action = iota + 1
	// ActionPatch changes or drops a group's limit overrides.
	ActionPatch
	// ActionEvict evicts a group (EvictGroup).
	ActionEvict
	// ActionShutdown cancels a group's tasks (ShutdownGroup).
	ActionShutdown
)

// String returns "read", "patch", "evict" or "shutdown".
func (a Action) String() string {
	switch a {
	case ActionRead:
		return "read"
	case ActionPatch:
		return "patch"
	case ActionEvict:
		return "evict"
	case ActionShutdown:
		return "shutdown"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// AuditEvent tells of one write. A write the handler turned away before
// the executor saw it has Refused set, a non-nil Err and no stats.
type AuditEvent struct {
	At     time.Time
	Who    string // Options.Identify's answer, or the request's RemoteAddr
	Action Action
	// Group is the group's key as the executor knows it, not as shown.
	Group string
	// Before and After are the group's stats around the write. After is the
	// zero value when the group was evicted.
	Before, After groupconc.GroupStats
	// OverrideBefore and OverrideAfter are the group's overrides around
	// the write.
	OverrideBefore, OverrideAfter groupconc.GroupOverride
	// Err is nil when the write was applied. It is the executor's refusal,
	// or for a write the handler turned away an error matching ErrRefused.
	Err error
	// Status is the HTTP status the write was answered with.
	Status int
	// Refused says why the handler turned the write away, as its answer's
	// error does. It is "" for a write that reached the executor.
	Refused string
	// Name is the group as the request named it, cut to 200 bytes. It is
	// the request's input, so quote it when logging it. Group is "" when
	// no group of that name was found.
	Name string
}

// ErrRefused is matched by an AuditEvent's Err when the handler turned the
// write away before it reached the executor.
var ErrRefused = errors.New("httpgc: write refused")

// HashKey returns a DisplayKey function that shows each key as a keyed hash.
// The hash is HMAC-SHA-256 under secret, 16 hex digits after "h-". So
// per-user or per-IP group keys never reach the page, while one key keeps
// one name. Keep secret private and stable, because with it a key can be
// checked against its name.
func HashKey(secret []byte) func(key string) string {
	secret = append([]byte(nil), secret...)
	// A snapshot may hash every group's key, so keyed states are reused.
	pool := sync.Pool{New: func() any { return hmac.New(sha256.New, secret) }}
	return func(key string) string {
		m := pool.Get().(hash.Hash)
		defer pool.Put(m)
		m.Reset()
		io.WriteString(m, key)
		var sum [sha256.Size]byte
		var out [2 + 16]byte
		copy(out[:], "h-")
		hex.Encode(out[2:], m.Sum(sum[:0])[:8])
		return string(out[:])
	}
}
