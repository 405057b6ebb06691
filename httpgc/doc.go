// Package httpgc serves a live dashboard and a JSON admin API for a
// groupconc.GroupExecutor: totals, the groups that have waited longest,
// what decided each of their limits, recent pressure warnings, and, only
// when allowed, changes to a group's limits.
//
// Nothing is registered anywhere: New returns an http.Handler that the
// application mounts where it wants. Every URL the page uses is relative,
// so http.StripPrefix is all a sub-path takes:
//
//	h, err := httpgc.New(e, httpgc.Options{})
//	mux.Handle("/debug/groupconc/", http.StripPrefix("/debug/groupconc", h))
//
// Routes, relative to the mount point:
//
//	GET   /                                the dashboard (HTML, no external asset)
//	GET   /api/stats                       the executor's totals
//	GET   /api/groups?sort=&limit=&prefix=  {"total":N,"groups":[row...]}; sort is oldestWait
//	                                       (default), waiting, running or key; limit 1 to 1000 (100)
//	GET   /api/groups/{group}              one row; 404 for an unknown group
//	GET   /api/groups/{group}/explain      per limit, the setting that decided it and those it shadows
//	GET   /api/warnings                    the recent pressure warnings, newest first
//	GET   /api/events                      text/event-stream: "snapshot" events ({"stats":…,"groups":[…]})
//	                                       at once and every Interval, "warnings" events, heartbeats
//	PATCH /api/groups/{group}              a JSON merge patch of the group's overrides; the new row
//	POST  /api/groups/{group}/evict        EvictGroup; 204
//	POST  /api/groups/{group}/shutdown     ShutdownGroup; the row
//
// A row is {"group","running","waiting","blocked","inFlight",
// "maxConcurrency","maxInFlight","queueThreshold","weight","oldestWaitMs",
// "source"}, where a limit is a number or "unlimited", and source names per
// limit what set it: "builtin", "default", "resolver", "group" or
// "override". A PATCH body such as {"maxConcurrency":2,"queueThreshold":null}
// overrides one limit and drops the override of another; its fields are
// maxConcurrency, maxInFlight, queueThreshold and weight, each a number,
// "unlimited" (not weight) or null. An unknown field or a bad value gets 422
// naming it, and nothing changes.
//
// Security defaults. Without Options.Authorize only loopback clients are
// served (403 otherwise). Writes get 405 unless Options.AllowWrites, which
// needs Authorize (New refuses it alone). A write must be same-origin
// (http.CrossOriginProtection, 403), carry Content-Type: application/json
// (415) and a body of at most 64 KiB (413). No response carries CORS
// headers; the page is served with a Content-Security-Policy that allows
// its own inline script and style only, by nonce. The handler never runs
// code and never fetches a URL it is given. It shows no task ids, payloads
// or errors; group keys go through Options.DisplayKey (see HashKey).
//
// Cost. Mounting the handler adds nothing to a task's path: it only reads
// the executor's stats. While at least one stream is open, one goroutine
// builds one snapshot per Interval for every client: the totals, then one
// pass over the groups keeping the top Rows in a heap (O(G log Rows) for G
// groups).
package httpgc
