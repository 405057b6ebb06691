// Package grouplabel caps the group label values of the metrics of its
// module. Group keys are unbounded, and their label values must not be.
//
// promgc and otelgc each have a copy of this package. Each module is
// released on its own, and neither imports the other's internal packages.
// A change here goes to both, and .ci/run checks that the copies are
// identical.
package grouplabel

import (
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Other is the group label value of every group that the allowlist leaves
// out, whose value is empty or not valid UTF-8, or that comes after the cap
// on distinct values is reached.
const Other = "_other"

// DefaultMax is the cap on distinct group label values when none is given.
const DefaultMax = 100

// Set maps group keys to group label values, and each value to the
// series S kept for it. It admits values first come, first served, up to
// max, and sends every later one to Other. So the series stay bounded
// whatever the keys. The listener and the collector share one, so they
// agree on which values exist.
type Set[S any] struct {
	class   func(groupKey string) string // nil: the key itself
	allow   map[string]bool              // nil: every value
	max     int
	newS    func(value string) S
	enabled bool
	none    S // the one series when the group label is off

	values sync.Map    // value → S: admitted values, and Other once used
	full   atomic.Bool // the cap is reached: unknown values go to Other
	mu     sync.Mutex  // serialises admissions
	n      int         // admitted values, Other not counted; guarded by mu
}

// New returns a Set that labels a group by class(key), or by the key if
// class is nil. It keeps only the values in allowlist if that is not
// empty, and admits at most max values (DefaultMax if 0). It makes each
// value's series with newS. With neither class nor allowlist the group
// label is off: one series, for value "".
func New[S any](class func(groupKey string) string, allowlist []string, max int, newS func(value string) S) *Set[S] {
	l := &Set[S]{class: class, max: max, newS: newS}
	if l.max == 0 {
		l.max = DefaultMax
	}
	if len(allowlist) > 0 {
		l.allow = make(map[string]bool, len(allowlist))
		for _, v := range allowlist {
			l.allow[v] = true
		}
	}
	l.enabled = l.class != nil || l.allow != nil
	if !l.enabled {
		l.none = newS("")
	}
	return l
}

// Series returns the series of groupKey's label value, and that value ("" when
// the group label is off).
func (l *Set[S]) Series(groupKey string) (S, string) {
	if !l.enabled {
		return l.none, ""
	}
	v := l.value(groupKey)
	if s, ok := l.values.Load(v); ok {
		return s.(S), v
	}
	if l.full.Load() {
		v = Other
		if s, ok := l.values.Load(v); ok {
			return s.(S), v
		}
	}
	return l.admit(v)
}

// value returns groupKey's label value before the cap.
func (l *Set[S]) value(groupKey string) string {
	v := groupKey
	if l.class != nil {
		v = l.classOf(groupKey)
	}
	// Prometheus refuses a label value that is not valid UTF-8, and fails
	// the whole scrape. OTLP refuses such a string too. So it means Other.
	if v == "" || !utf8.ValidString(v) || l.allow != nil && !l.allow[v] {
		return Other
	}
	return v
}

// classOf calls the user's class function. A panic in it means Other, so
// a bad mapping neither breaks a scrape nor is blamed on a task.
func (l *Set[S]) classOf(groupKey string) (v string) {
	defer func() {
		if recover() != nil {
			v = Other
		}
	}()
	return l.class(groupKey)
}

// admit makes v's series, or Other's when the cap is reached.
func (l *Set[S]) admit(v string) (S, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.values.Load(v); ok {
		return s.(S), v
	}
	if v != Other {
		if l.n >= l.max {
			l.full.Store(true)
			return l.admitLocked(Other), Other
		}
		l.n++
	}
	return l.admitLocked(v), v
}

func (l *Set[S]) admitLocked(v string) S {
	if s, ok := l.values.Load(v); ok {
		return s.(S)
	}
	s := l.newS(v)
	l.values.Store(v, s)
	return s
}

// Enabled reports whether the group label is on.
func (l *Set[S]) Enabled() bool { return l.enabled }

// Each calls f for every admitted value and its series.
func (l *Set[S]) Each(f func(value string, s S)) {
	if !l.enabled {
		f("", l.none)
		return
	}
	l.values.Range(func(k, s any) bool {
		f(k.(string), s.(S))
		return true
	})
}
