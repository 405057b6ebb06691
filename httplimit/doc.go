// Package httplimit puts groupconc's limits on HTTP traffic, both ways.
//
// On a server, Handler (or Middleware) runs each request under the limits
// of its group, as groupconc.Do does. The group comes from the request,
// its path by default, a header with HeaderKey, or any func. A turned-away
// request gets 429 Too Many Requests when its group is busy, and 503
// Service Unavailable when the whole server is, both with Retry-After.
//
//	e := groupconc.New(policy)
//	limit := httplimit.Middleware(e, httplimit.ServerOptions{
//		Key:    httplimit.HeaderKey("X-Tenant", "anonymous"),
//		Submit: groupconc.SubmitOptions{Block: true, MaxWait: time.Second},
//	})
//	http.ListenAndServe(":8080", limit(mux))
//
// On a client, Transport limits outgoing requests by group, the host by
// default. A request holds its permits until its response body is closed.
//
//	client := &http.Client{Transport: &httplimit.Transport{Executor: e}}
//
// Both count in the executor's stats, listeners and dashboard as tasks
// do. The package uses the standard library and groupconc only.
package httplimit
