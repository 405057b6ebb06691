// Package grpcgc limits gRPC calls with a groupconc executor.
//
// On the server, UnaryServerInterceptor and StreamServerInterceptor run
// each call's handler through groupconc.Do. The handler runs on the
// call's own goroutine once the call holds its group's permits. A call is
// keyed by its full method unless an option says otherwise: an incoming
// metadata key (a tenant header) or a function of the call. A call turned
// away gets codes.ResourceExhausted, or codes.Unavailable when the global
// queue was full. Its trailer carries grpc-retry-pushback-ms, so that a
// client's retry policy waits before it tries again. A call counts as a
// task. A handler's error fails it, but the Canceled or DeadlineExceeded
// status of the call's ended context counts as cancelled, as a task that
// returns its context's error.
//
//	e := groupconc.New(policy)
//	s := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(recoverer, grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant"))),
//		grpc.ChainStreamInterceptor(grpcgc.StreamServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant"))),
//	)
//
// On the client, UnaryClientInterceptor and StreamClientInterceptor limit
// outbound calls, keyed by the connection's target by default. A stream
// holds its permits until it ends. A call the client turns away fails
// with an error that has a gRPC status and matches groupconc.ErrRejected.
//
// grpc-go does not recover a handler's panic: it ends the process. The
// interceptors let the panic go on up, with the permits already given
// back. A recovery interceptor placed before them turns it into an error.
// On the client the same holds for an invoker or streamer (the next
// interceptor, or gRPC) that panics or calls runtime.Goexit.
package grpcgc
