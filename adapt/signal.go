package adapt

import (
	"context"
	"errors"
	"fmt"

	"github.com/kobe/groupconc"
)

// Signal is what one sample says about the backend.
type Signal int

const (
	// Ignore: the sample says nothing (a task cancelled by its caller, a
	// failure unrelated to load); the algorithm skips it.
	Ignore Signal = iota
	// Measure: a normal completion, whose run time measures the backend.
	Measure
	// Overload: the backend is overloaded (a timeout, an "over capacity"
	// error). Its run time, if the algorithm reads it, is a lower bound.
	Overload
)

// String returns "ignore", "measure" or "overload".
func (s Signal) String() string {
	switch s {
	case Ignore:
		return "ignore"
	case Measure:
		return "measure"
	case Overload:
		return "overload"
	}
	return fmt.Sprintf("Signal(%d)", int(s))
}

// DefaultClassify is the Classify of Gradient: a SUCCESS measures the
// backend, a CANCELLED task whose error matches context.DeadlineExceeded
// (its deadline passed while it ran) signals overload, and anything else
// (a failure, a cancel by the caller or by a shutdown) is ignored.
func DefaultClassify(s groupconc.LimitSample) Signal { return classify(&s) }

// classify is DefaultClassify, without copying the sample.
func classify(s *groupconc.LimitSample) Signal {
	switch s.Status {
	case groupconc.StatusSuccess:
		return Measure
	case groupconc.StatusCancelled:
		if errors.Is(s.Err, context.DeadlineExceeded) {
			return Overload
		}
	}
	return Ignore
}

// FailuresOverload is the Classify of AIMD: DefaultClassify, but a FAILED
// task signals overload too.
func FailuresOverload(s groupconc.LimitSample) Signal { return classifyFailures(&s) }

// classifyFailures is FailuresOverload, without copying the sample.
func classifyFailures(s *groupconc.LimitSample) Signal {
	if s.Status == groupconc.StatusFailed {
		return Overload
	}
	return classify(s)
}
