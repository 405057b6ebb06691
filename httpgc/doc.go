// Package httpgc serves a live dashboard and a JSON admin API for a
// groupconc.GroupExecutor. It shows totals, the groups that have waited
// longest, why each one waits, what decided each of their limits and
// recent pressure warnings. Only when allowed, it changes a group's
// limits and pauses or resumes a group.
//
// Nothing is registered anywhere. New returns an http.Handler that the
// application mounts where it wants. Every URL the page uses is relative,
// so http.StripPrefix is all a sub-path takes.
//
//	h, err := httpgc.New(e, httpgc.Options{})
//	mux.Handle("/debug/groupconc/", http.StripPrefix("/debug/groupconc", h))
//
// The handler watches the executor's pressure warnings itself
// (GroupExecutor.WatchPressure), from New until Close. Their thresholds are
// the policy's PressureConfig, or its defaults.
//
// These are the routes, relative to the mount point.
//
//	GET   /                                the dashboard (HTML, no external asset)
//	GET   /api/stats                       the executor's totals
//	GET   /api/groups?sort=&limit=&prefix=  {"total":N,"groups":[row...]}; sort is oldestWait
//	                                       (default), waiting, running or key; limit 1 to 1000 (100)
//	GET   /api/groups/{group}              one row; 404 for an unknown group
//	GET   /api/groups/{group}/explain      per limit, the setting that decided it and those it shadows
//	GET   /api/warnings                    the recent pressure warnings, newest first
//	GET   /api/events                      text/event-stream: "snapshot" events ({"stats":…,"groups":[…],
//	                                       "history":…,"nextMs":N}) at once and every Interval, "warnings"
//	                                       events, heartbeats
//	PATCH /api/groups/{group}              a JSON merge patch of the group's overrides; the new row
//	POST  /api/groups/{group}/evict        EvictGroup; 204
//	POST  /api/groups/{group}/shutdown     ShutdownGroup; the row
//	GET, PATCH, POST /api/group[/explain|/evict|/shutdown]?group=NAME
//	                                       the same, with the group named in the query
//
// A group is named by its displayed key. In a path it is escaped as one
// segment (url.PathEscape), so "a/b" is a%2Fb. A browser resolves a path
// segment "." or "..", even as %2E. The query form reaches any key whose
// escaped form fits in the server's header limit (http.Server's
// MaxHeaderBytes, about 1 MB by default, beyond which net/http answers
// 431). The page uses it. Its write to a longer key fails, and it says so.
// The Go API (GroupExecutor) reaches every key. A key that is not valid
// UTF-8 is displayed with a U+FFFD for each bad byte, as JSON carries it.
// When two groups are displayed alike, a read or a write of that name
// answers 409, whether a stream is open or not. A name that is not valid
// UTF-8 is displayed for no group. Without a DisplayKey it names the
// group of that exact key, so a client that knows the bytes reaches it. The JSON carries keys
// exactly. The page shows a key's invisible, bidi and look-alike
// characters escaped as strconv.Quote writes them (\u200b), and an error
// message has the characters strconv.Quote escapes escaped too (see
// docs/dashboard.md, "Keys that look alike").
//
// The handler never redirects. A path that is not clean, with a "//",
// a "." or ".." segment (not escaped), or no leading "/", gets 404. An
// http.ServeMux would redirect it to the clean path, repeating the URL in
// Location, and past a StripPrefix mount point. So the prefix to strip
// has no final "/".
//
// A row is {"group","running","waiting","blocked","inFlight",
// "maxConcurrency","maxInFlight","queueThreshold","weight","oldestWaitMs",
// "source","parent","runningCost","waitingGlobal","oldestRunningMs",
// "paused","succeeded","failed","cancelled","rejected","pausedBy","why",
// "hung","recent","history"}. The fields up to "rejected" are as
// GroupStats has them. "pausedBy" is there only for a group paused by an
// ancestor alone. A limit is a number or "unlimited". Source names per limit
// what set it, which is "builtin", "default", "resolver", "group" or
// "override". A
// PATCH body such as {"maxConcurrency":2,"queueThreshold":null} overrides
// one limit and drops the override of another. Its fields are
// maxConcurrency, maxInFlight, queueThreshold and weight. Each is a
// number, "unlimited" (not weight) or null. "paused" is true, false or
// null. A paused group starts nothing until resumed. An unknown field or
// a bad value gets 422 naming it, and nothing changes. That holds for a
// value the executor refuses too, such as a weight without fair share.
// The answer names the field as the body does, with the value sent. A
// field given twice gets 422 naming it too, since only its last value
// would be read.
// A body is one JSON object with only whitespace after it: anything more
// is malformed (400), and nothing changes.
//
// Why a group waits. A row's "why" says where its first waiting task
// waits, by the first rule that holds. "paused" means the group or an
// ancestor is paused. For an ancestor's pause, "pausedBy" names the
// nearest ancestor paused by its own override. "global cap" means it
// waits for a global permit. "own limit: bulkhead" means its in-flight
// count is at its bulkhead and no waiting task is past it. "own limit:
// concurrency" means its running tasks hold its concurrency limit.
// Callers blocked on a full queue wait too: with no task waiting, the
// row says what keeps their tasks from starting.
// "parent limit: acme" means it waits at acme's bulkhead, or its own
// limits have room, but acme, its nearest ancestor at its concurrency,
// holds it back. "own limit" means the counts cannot place the wait (a
// costly task's), or its permits are being handed on. With nothing waiting,
// "running long: 12 m" means its oldest task has run Options.LongRun or
// more (10s by default). Otherwise "why" is "". "hung" is true when the
// group runs at its concurrency limit and its oldest task has run LongRun
// or more. None of its tasks must have finished in the last LongRun, as
// far as the history reaches. A busy group is at its limit too, but its
// tasks finish, so it is not hung.
//
// Groups of groups. A row's "parent" names its group's parent as rows
// name groups, or is "" at the top. A list of groups (api/groups, a
// snapshot) carries the ancestors of every child it shows, so that none is
// orphaned. They count in its limit (Rows, or limit) but not in its
// "total". A child whose ancestors do not fit is left out. The page draws
// each child under its parent, hidden until the parent is opened.
//
// History. From New until Close, a timer samples the totals and the
// groups a snapshot shows, once per Interval. No goroutine runs between
// samples. The handler keeps Options.History samples (60 by default) for
// the totals and for at most twice Rows groups, forgetting those shown
// longest ago. A row's "history" is its waiting count per sample, oldest
// first. Its "recent" counts its tasks' outcomes over the last minute,
// from the counters' deltas, with the seconds it covers. It is null until
// a sample exists. A group forgotten and made again counts from 0. A
// sample that finds a counter fallen takes the samples before as 0. One
// made again that passes its old counts within an Interval is not seen. A snapshot's "history" holds the totals' waiting and
// running counts, so a page that opens draws full sparklines at once.
//
// Security defaults. A request's Host must name a loopback host (localhost,
// 127.0.0.0/8, [::1]) or one of Options.AllowedHosts, or it gets 403,
// whatever Authorize says. That stops DNS rebinding, because a page whose
// name now points at 127.0.0.1 still sends its own name as Host. Without
// Options.Authorize only loopback clients are served (403 otherwise).
// Writes get 405 unless Options.AllowWrites, which needs Authorize (New
// refuses it alone). A write must be same-origin
// (http.CrossOriginProtection, 403). So must a read of api/, the stream
// included: another origin's page gets 403 before it takes a stream slot
// (MaxClients) or costs a pass over the groups. It could not read the
// answer anyway. The page itself is served to any origin, so a link to it
// works. A write must carry the Content-Type application/json (415) and a
// body of at most 64 KiB (413). No response carries CORS headers. The page
// is served with a Content-Security-Policy that allows its own inline
// script and style only, by nonce. The handler never runs code and never
// fetches a URL it is given. It shows no task ids, payloads or errors.
// Group keys go through Options.DisplayKey (see HashKey). An error that
// repeats a request's input quotes it, cut to 200 bytes.
//
// The table below says what the handler takes from a request, and why a
// forged value gains nothing.
//
//	header           trusted for                  why it is safe
//	Host             the Host check; the origin   a browser sets it from the URL it fetches, and a script
//	                 a write or api/ read must    cannot; a non-browser client that forges it only reaches
//	                 come from                    what its own address and Authorize allow
//	Origin,          http.CrossOriginProtection   a browser sets them and a script cannot; they are compared
//	Sec-Fetch-Site   for writes and api/ reads,   with the checked Host; a client with neither passes, and
//	                 the stream too (same-origin) Authorize still decides
//	Content-Type     writes: application/json     only narrows: a cross-site form or a simple fetch cannot
//	                 or 415                       send it without a CORS preflight, and none is answered
//	Content-Length   refusing a body over 64 KiB  a body is read through http.MaxBytesReader whatever it
//	                 early (413)                  says
//	RemoteAddr       without Authorize, loopback  the TCP peer, not a header; behind a proxy it is the
//	(not a header)   clients only; the audit Who  proxy's, so set Authorize there
//	X-Forwarded-*,   nothing: never read          the client sets them; only Authorize or Identify may
//	Forwarded,                                    read them, behind a proxy that overwrites them
//	X-Real-IP
//	Referer          nothing: never read          responses carry Referrer-Policy: no-referrer
//	Cookie,          nothing: never read          Authorize may read them; the page sends cookies only
//	Authorization                                 to its own origin
//	Last-Event-ID,   nothing: never read          a reconnecting stream gets the current snapshot
//	Accept
//	the URL: path,   which group, which rows      data only: never run, fetched or put in a reply's header;
//	group, sort,                                  an error repeats it quoted and cut to 200 bytes
//	limit, prefix
//
// Audit. Options.Audit hears of every write. That is one applied, one the
// executor refused (Err set), and one the handler turned away before the
// executor saw it. The last has Refused, Status and Err matching
// ErrRefused. Reads are not audited.
//
// Cost. Mounting the handler adds nothing to a task's path, since it only
// reads the executor's stats. The history's sampler reads the totals and
// passes once over the active groups (ActiveGroupStats) per Interval. It
// keeps the top Rows in a heap (O(A log Rows) for A active groups). While at
// least one stream is open, one goroutine builds one snapshot per Interval
// for every client, with the same pass. Each waits nine times as long as it
// took before the next, and says that wait in its "nextMs". The page polls
// only when a snapshot is late by that, with a margin, so a slow stream
// costs no polls. GET api/groups passes over every group remembered, idle
// ones included.
package httpgc
