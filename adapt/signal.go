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
	// Ignore means the sample says nothing, and the algorithm skips it.
	// A task cancelled by its caller, or a failure unrelated to load.
	Ignore Signal = iota
	// Measure is a normal completion, whose run time measures the backend.
	Measure
	// Overload means the backend is overloaded, as a timeout or an "over
	// capacity" error shows. Its run time, if read, is a lower bound.
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

// DefaultClassify is the Classify of Gradient. A SUCCESS measures the
// backend. A task whose error matches context.DeadlineExceeded signals
// overload, since a deadline passed while it ran: its own (it ends
// CANCELLED), or one it set on its call to the backend (it ends FAILED).
// Either way the call was given up on, and the backend may still work on
// it. Anything else is ignored, such as another failure or a cancel by the
// caller or a shutdown.
func DefaultClassify(s groupconc.LimitSample) Signal { return classify(&s) }

// classify is DefaultClassify, without copying the sample.
func classify(s *groupconc.LimitSample) Signal {
	switch s.Status {
	case groupconc.StatusSuccess:
		return Measure
	case groupconc.StatusCancelled, groupconc.StatusFailed:
		// A FAILED task's deadline was one it set itself: its context
		// was not done (see groupconc's outcomes). A client's timeout
		// per call is the usual one. Were it ignored, a backend that
		// times out every call would leave only the calls fast enough
		// to measure, or none, and the limit would never fall.
		if errors.Is(s.Err, context.DeadlineExceeded) {
			return Overload
		}
	}
	return Ignore
}

// FailuresOverload is the Classify of AIMD. It is DefaultClassify, but a
// FAILED task signals overload too.
func FailuresOverload(s groupconc.LimitSample) Signal { return classifyFailures(&s) }

// classifyFailures is FailuresOverload, without copying the sample.
func classifyFailures(s *groupconc.LimitSample) Signal {
	if s.Status == groupconc.StatusFailed {
		return Overload
	}
	return classify(s)
}
