package grpcgc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kobe/groupconc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// An Option configures an interceptor. The same options serve the server
// and the client interceptors. On the server, metadata is the incoming
// metadata of the call. On the client, it is the outgoing metadata. A nil
// Option is skipped, so that a caller may leave one out by position.
type Option func(*config)

// PushbackHeader is the trailer key that carries the retry pushback. A
// gRPC client with a retry policy waits that many milliseconds before it
// retries.
const PushbackHeader = "grpc-retry-pushback-ms"

// DefaultPushback is the retry pushback sent with a rejection unless
// WithRetryPushback sets another.
const DefaultPushback = 100 * time.Millisecond

// config is what the options set.
type config struct {
	key      func(ctx context.Context, fullMethod string) string
	keyMD    string
	prio     func(ctx context.Context, fullMethod string) groupconc.Priority
	prioMD   string
	cost     func(ctx context.Context, fullMethod string) int
	costMD   string
	submit   groupconc.SubmitOptions
	pushback time.Duration
}

func newConfig(opts []Option) *config {
	c := &config{pushback: DefaultPushback}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// WithKeyFunc keys each call by what f returns. An empty key leaves the
// call to the default key. That is the full method on the server and the
// connection's target on the client. It replaces WithKeyFromMetadata.
func WithKeyFunc(f func(ctx context.Context, fullMethod string) string) Option {
	return func(c *config) { c.key, c.keyMD = f, "" }
}

// WithKeyFromMetadata keys each call by the first value of the metadata
// key name, such as a tenant header. A call without it, or with an empty
// value, takes the default key. It replaces WithKeyFunc. Each value the
// clients send makes a group. So for untrusted clients, let the policy's
// IdleGroupTTL forget idle groups, or map the values to known groups with
// WithKeyFunc.
func WithKeyFromMetadata(name string) Option {
	return func(c *config) { c.key, c.keyMD = nil, strings.ToLower(name) }
}

// WithPriorityFunc gives each call the priority f returns. It replaces
// WithPriorityFromMetadata.
func WithPriorityFunc(f func(ctx context.Context, fullMethod string) groupconc.Priority) Option {
	return func(c *config) { c.prio, c.prioMD = f, "" }
}

// WithPriorityFromMetadata gives each call the priority named by the
// metadata key name. The value is a Priority's String(), such as "high".
// A call without it takes the priority of WithSubmitOptions. Another value
// fails the call with codes.InvalidArgument. A client can then raise its
// own calls, so use it only for trusted callers.
func WithPriorityFromMetadata(name string) Option {
	return func(c *config) { c.prio, c.prioMD = nil, strings.ToLower(name) }
}

// WithCostFunc gives each call the cost f returns, the permits it takes at
// each limit. A cost the executor refuses fails the call with
// codes.InvalidArgument. It replaces WithCostFromMetadata.
func WithCostFunc(f func(ctx context.Context, fullMethod string) int) Option {
	return func(c *config) { c.cost, c.costMD = f, "" }
}

// WithCostFromMetadata gives each call the cost in the metadata key name,
// decimal digits. A call without it takes the cost of WithSubmitOptions.
// Any other value, a sign included, fails the call with
// codes.InvalidArgument. A client can then take the whole of every limit
// with one call, which the cheaper calls behind it wait for. So use it
// only for trusted callers.
func WithCostFromMetadata(name string) Option {
	return func(c *config) { c.cost, c.costMD = nil, strings.ToLower(name) }
}

// WithSubmitOptions sets the options each call is submitted with. Block
// and MaxWait make a call wait for a queue slot. Priority and Cost are the
// defaults that the options above override.
func WithSubmitOptions(o groupconc.SubmitOptions) Option {
	return func(c *config) { c.submit = o }
}

// WithRetryPushback sets the pushback a server sends with a rejection. A
// positive d is sent in milliseconds. A negative d sends -1, which tells
// the client not to retry. Zero sends no pushback. It has no effect on the
// client interceptors.
func WithRetryPushback(d time.Duration) Option {
	return func(c *config) { c.pushback = d }
}

// resolve returns the group key and the submit options of one call.
// A bad priority or cost in the metadata is an InvalidArgument status.
func (c *config) resolve(ctx context.Context, method string, md metadata.MD, def string) (string, groupconc.SubmitOptions, error) {
	key, o := "", c.submit
	switch {
	case c.key != nil:
		key = c.key(ctx, method)
	case c.keyMD != "":
		key = first(md, c.keyMD)
	}
	if key == "" {
		key = def
	}
	switch {
	case c.prio != nil:
		o.Priority = c.prio(ctx, method)
	case c.prioMD != "":
		if v := first(md, c.prioMD); v != "" {
			p, ok := parsePriority(v)
			if !ok {
				return "", o, badValue(c.prioMD, v, "a priority (highest, high, normal, low or lowest)")
			}
			o.Priority = p
		}
	}
	switch {
	case c.cost != nil:
		o.Cost = c.cost(ctx, method)
	case c.costMD != "":
		if v := first(md, c.costMD); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || v[0] < '0' || v[0] > '9' {
				return "", o, badValue(c.costMD, v, "a cost (a number from 0)")
			}
			o.Cost = n
		}
	}
	return key, o, nil
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func parsePriority(s string) (groupconc.Priority, bool) {
	for p := groupconc.PriorityHighest; p <= groupconc.PriorityLowest; p++ {
		if strings.EqualFold(s, p.String()) {
			return p, true
		}
	}
	return 0, false
}

func badValue(key, v, want string) error {
	return status.Errorf(codes.InvalidArgument, "grpcgc: metadata %s is %s, not %s", key, quote(v), want)
}

// quote quotes a caller's string for a message, cut at 64 bytes.
func quote(s string) string {
	const limit = 64
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:limit]) + fmt.Sprintf("... (%d bytes)", len(s))
}
