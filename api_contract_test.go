package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	gc "github.com/kobe/groupconc"
)

// The first release's exported API, written as DESIGN.md spells it. Each
// line fails to compile if a name or a signature drifts.
var (
	_ = [1]struct{}{}[gc.Unlimited-math.MaxInt]

	_ gc.Task[int] = func(context.Context) (int, error) { return 0, nil }
	_              = gc.GroupTask[int]{GroupKey: "", TaskID: "", Task: gc.Task[int](nil)}

	_ gc.TaskStatus = gc.StatusSuccess
	_ gc.TaskStatus = gc.StatusFailed
	_ gc.TaskStatus = gc.StatusCancelled
	_ gc.TaskStatus = gc.StatusRejected
	_ fmt.Stringer  = gc.TaskStatus(0)

	_ = gc.GroupResult[int]{
		GroupKey: "", TaskID: "", Status: gc.TaskStatus(0), Value: int(0),
		Err: error(nil), Submitted: time.Time{}, Start: time.Time{}, End: time.Time{},
	}
	_ func(gc.GroupResult[int]) time.Duration = gc.GroupResult[int].Duration
	_ func(gc.GroupResult[int]) time.Duration = gc.GroupResult[int].QueueWait

	_ func() *gc.PolicyBuilder                                             = gc.NewPolicyBuilder
	_ func(*gc.PolicyBuilder, map[string]int) *gc.PolicyBuilder            = (*gc.PolicyBuilder).PerGroupMaxConcurrency
	_ func(*gc.PolicyBuilder, func(groupKey string) int) *gc.PolicyBuilder = (*gc.PolicyBuilder).ConcurrencyResolver
	_ func(*gc.PolicyBuilder, int) *gc.PolicyBuilder                       = (*gc.PolicyBuilder).DefaultMaxConcurrencyPerGroup
	_ func(*gc.PolicyBuilder, int) *gc.PolicyBuilder                       = (*gc.PolicyBuilder).GlobalMaxInFlight
	_ func(*gc.PolicyBuilder, int) *gc.PolicyBuilder                       = (*gc.PolicyBuilder).DefaultMaxInFlightPerGroup
	_ func(*gc.PolicyBuilder, map[string]int) *gc.PolicyBuilder            = (*gc.PolicyBuilder).PerGroupMaxInFlight
	_ func(*gc.PolicyBuilder, int) *gc.PolicyBuilder                       = (*gc.PolicyBuilder).GlobalQueueThreshold
	_ func(*gc.PolicyBuilder, int) *gc.PolicyBuilder                       = (*gc.PolicyBuilder).DefaultQueueThresholdPerGroup
	_ func(*gc.PolicyBuilder, map[string]int) *gc.PolicyBuilder            = (*gc.PolicyBuilder).PerGroupQueueThreshold
	_ func(*gc.PolicyBuilder, gc.RejectionPolicy) *gc.PolicyBuilder        = (*gc.PolicyBuilder).RejectionPolicy
	_ func(*gc.PolicyBuilder, gc.RejectionHandler) *gc.PolicyBuilder       = (*gc.PolicyBuilder).RejectionHandler
	_ func(*gc.PolicyBuilder, gc.TaskLifecycleListener) *gc.PolicyBuilder  = (*gc.PolicyBuilder).TaskLifecycleListener
	_ func(*gc.PolicyBuilder) (*gc.GroupPolicy, error)                     = (*gc.PolicyBuilder).Build
	_ func() *gc.GroupPolicy                                               = gc.DefaultPolicy
	_ func(*gc.GroupPolicy, string) int                                    = (*gc.GroupPolicy).ResolveConcurrency
	_ func(*gc.GroupPolicy, string) int                                    = (*gc.GroupPolicy).ResolveMaxInFlight
	_ func(*gc.GroupPolicy, string) int                                    = (*gc.GroupPolicy).ResolveQueueThreshold
	_ func(*gc.GroupPolicy) int                                            = (*gc.GroupPolicy).GlobalMaxInFlight
	_ func(*gc.GroupPolicy) int                                            = (*gc.GroupPolicy).GlobalQueueThreshold

	_ func(*gc.GroupPolicy) *gc.GroupExecutor                                                             = gc.New
	_ func(context.Context, *gc.GroupExecutor, string, string, gc.Task[int]) (*gc.TaskHandle[int], error) = gc.Submit[int]
	_ func(context.Context, *gc.GroupExecutor, []gc.GroupTask[int]) ([]gc.GroupResult[int], error)        = gc.ExecuteAll[int]
	_ func(*gc.GroupExecutor, string)                                                                     = (*gc.GroupExecutor).ShutdownGroup
	_ func(*gc.GroupExecutor, string)                                                                     = (*gc.GroupExecutor).EvictGroup
	_ func(*gc.GroupExecutor, context.Context) error                                                      = (*gc.GroupExecutor).Shutdown
	_ func(*gc.GroupExecutor) error                                                                       = (*gc.GroupExecutor).Close

	_ func(*gc.TaskHandle[int]) string                                        = (*gc.TaskHandle[int]).GroupKey
	_ func(*gc.TaskHandle[int]) string                                        = (*gc.TaskHandle[int]).TaskID
	_ func(*gc.TaskHandle[int]) <-chan struct{}                               = (*gc.TaskHandle[int]).Done
	_ func(*gc.TaskHandle[int]) bool                                          = (*gc.TaskHandle[int]).IsDone
	_ func(*gc.TaskHandle[int]) bool                                          = (*gc.TaskHandle[int]).Cancel
	_ func(*gc.TaskHandle[int], context.Context) (gc.GroupResult[int], error) = (*gc.TaskHandle[int]).Await
	_ func(*gc.TaskHandle[int]) gc.GroupResult[int]                           = (*gc.TaskHandle[int]).Wait

	_ gc.RejectionPolicy                                = gc.RejectAbort
	_ gc.RejectionPolicy                                = gc.RejectDiscard
	_ gc.RejectionPolicy                                = gc.RejectCallerRuns
	_                                                   = gc.RejectedError{GroupKey: "", TaskID: "", Reason: ""}
	_ error                                             = (*gc.RejectedError)(nil)
	_                                                   = gc.Rejection{GroupKey: "", TaskID: "", Reason: ""}
	_ func(*gc.Rejection, context.Context) (any, error) = (*gc.Rejection).Run
	_ gc.RejectionHandler                               = func(ctx context.Context, r *gc.Rejection) (any, error) { return nil, nil }

	_ gc.TaskLifecycleListener = gc.ListenerFuncs{}
	_ gc.TaskLifecycleListener = &gc.ListenerFuncs{}
	_                          = gc.ListenerFuncs{
		Submitted: func(groupKey, taskID string) {},
		Started:   func(groupKey, taskID string) {},
		Completed: func(groupKey, taskID string, result gc.GroupResult[any]) {},
		Rejected:  func(groupKey, taskID, reason string) {},
	}

	_ = gc.GroupStats{GroupKey: "", Running: 0, Waiting: 0, InFlight: 0, MaxConcurrency: 0, MaxInFlight: 0, QueueThreshold: 0}
	_ = gc.ExecutorStats{
		Groups: 0, Running: 0, Waiting: 0, GlobalInFlight: 0, GlobalMaxInFlight: 0,
		Submitted: uint64(0), Succeeded: uint64(0), Failed: uint64(0), Cancelled: uint64(0), Rejected: uint64(0),
	}
	_ func(*gc.GroupExecutor) gc.ExecutorStats              = (*gc.GroupExecutor).Stats
	_ func(*gc.GroupExecutor, string) (gc.GroupStats, bool) = (*gc.GroupExecutor).GroupStats

	_ error = gc.ErrClosed
	_ error = gc.ErrInvalidPolicy
	_ error = gc.ErrInvalidTask
	_ error = gc.ErrRejected
	_       = gc.PanicError{Value: any(nil), Stack: []byte(nil)}
)

// TestFirstReleaseAPIShapes checks what the compile-time lines cannot: the
// listener's method set, the field types of the stats structs and the
// constants' values and strings.
func TestFirstReleaseAPIShapes(t *testing.T) {
	var l gc.TaskLifecycleListener
	lt := reflect.TypeOf(&l).Elem()
	want := map[string]reflect.Type{
		"OnSubmitted": reflect.TypeOf(func(string, string) {}),
		"OnStarted":   reflect.TypeOf(func(string, string) {}),
		"OnCompleted": reflect.TypeOf(func(string, string, gc.GroupResult[any]) {}),
		"OnRejected":  reflect.TypeOf(func(string, string, string) {}),
	}
	if lt.NumMethod() != len(want) {
		t.Errorf("TaskLifecycleListener has %d methods, want %d", lt.NumMethod(), len(want))
	}
	for name, typ := range want {
		m, ok := lt.MethodByName(name)
		if !ok || m.Type != typ {
			t.Errorf("TaskLifecycleListener.%s = %v, want %v", name, m.Type, typ)
		}
	}
	fields := func(typ reflect.Type, want map[string]reflect.Type) {
		for name, ft := range want {
			f, ok := typ.FieldByName(name)
			if !ok || f.Type != ft {
				t.Errorf("%s.%s: got %v, want %v", typ.Name(), name, f.Type, ft)
			}
		}
	}
	it, u64, str := reflect.TypeFor[int](), reflect.TypeFor[uint64](), reflect.TypeFor[string]()
	fields(reflect.TypeFor[gc.GroupStats](), map[string]reflect.Type{
		"GroupKey": str, "Running": it, "Waiting": it, "InFlight": it,
		"MaxConcurrency": it, "MaxInFlight": it, "QueueThreshold": it,
	})
	fields(reflect.TypeFor[gc.ExecutorStats](), map[string]reflect.Type{
		"Groups": it, "Running": it, "Waiting": it, "GlobalInFlight": it, "GlobalMaxInFlight": it,
		"Submitted": u64, "Succeeded": u64, "Failed": u64, "Cancelled": u64, "Rejected": u64,
	})
	fields(reflect.TypeFor[gc.PanicError](), map[string]reflect.Type{
		"Value": reflect.TypeFor[any](), "Stack": reflect.TypeFor[[]byte](),
	})
	for _, typ := range []reflect.Type{reflect.TypeFor[gc.RejectedError](), reflect.TypeFor[gc.Rejection]()} {
		fields(typ, map[string]reflect.Type{"GroupKey": str, "TaskID": str, "Reason": str})
	}
	if reflect.TypeFor[gc.TaskStatus]().Kind() != reflect.Int || reflect.TypeFor[gc.RejectionPolicy]().Kind() != reflect.Int {
		t.Error("TaskStatus and RejectionPolicy must be ints")
	}
	for s, w := range map[gc.TaskStatus]string{gc.StatusSuccess: "SUCCESS", gc.StatusFailed: "FAILED", gc.StatusCancelled: "CANCELLED", gc.StatusRejected: "REJECTED"} {
		if s.String() != w {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), w)
		}
	}
	for p, w := range map[gc.RejectionPolicy]string{gc.RejectAbort: "RejectAbort", gc.RejectDiscard: "RejectDiscard",
		gc.RejectCallerRuns: "RejectCallerRuns", gc.RejectDiscardOldest: "RejectDiscardOldest", 9: "RejectionPolicy(9)"} {
		if p.String() != w {
			t.Errorf("%d.String() = %q, want %q", int(p), p.String(), w)
		}
	}
	if gc.StatusSuccess != 1 || gc.StatusFailed != 2 || gc.StatusCancelled != 3 || gc.StatusRejected != 4 {
		t.Error("status values drifted from iota + 1")
	}
	if gc.RejectAbort != 0 || gc.RejectDiscard != 1 || gc.RejectCallerRuns != 2 {
		t.Error("rejection policy values drifted from iota")
	}
	if !errors.Is(&gc.RejectedError{}, gc.ErrRejected) {
		t.Error("a *RejectedError does not match ErrRejected")
	}
	var pe error = &gc.PanicError{Value: "x"}
	_ = pe.Error()
}
