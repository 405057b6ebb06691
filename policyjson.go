package groupconc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON form of a policy. Every field is optional. An absent one keeps
// the library's default, as an unset builder setting does.
//
//	{
//	  "globalMaxInFlight": 64,                      // limit >= 1
//	  "globalQueueThreshold": "unlimited",          // limit >= 0
//	  "defaultMaxConcurrencyPerGroup": 2,           // limit >= 1
//	  "perGroupMaxConcurrency": {"premium": 8},     // limits >= 1
//	  "defaultMaxInFlightPerGroup": "unlimited",    // limit >= 1
//	  "perGroupMaxInFlight": {"premium": 32},       // limits >= 1
//	  "defaultQueueThresholdPerGroup": 100,         // limit >= 0
//	  "perGroupQueueThreshold": {"batch": 1000},    // limits >= 0
//	  "rejectionPolicy": "abort",                   // "abort", "discard", "callerRuns", "discardOldest"
//	  "isolation": "fair-share",                    // "off", "fair-share"
//	  "defaultWeightPerGroup": 1,                   // number >= 1, fair-share only
//	  "perGroupWeight": {"premium": 4},             // numbers >= 1, fair-share only
//	  "idleGroupTTL": "10m",                        // Go duration >= 0; "0s": never
//	  "parentSeparator": "/",                       // "a/b" is a child of "a"
//	  "pressure": {"backlogCount": 1000, "backlogAge": "5s", "cooldown": "30s"}
//	}
//
// A limit is a whole JSON number or the string "unlimited" (Unlimited).

// rejectionNames are the JSON names of the rejection policies.
var rejectionNames = []struct {
	name string
	p    RejectionPolicy
}{{"abort", RejectAbort}, {"discard", RejectDiscard}, {"callerRuns", RejectCallerRuns}, {"discardOldest", RejectDiscardOldest}}

var isolationNames = []struct {
	name string
	m    IsolationMode
}{{"off", IsolationOff}, {"fair-share", IsolationFairShare}}

// ParsePolicy reads the JSON form of a policy strictly and returns a builder
// holding it. Code hooks (resolvers, listener, rejection handler,
// PressureWarningFunc) may be added to it before Build. A field the JSON
// does not set stays at the library's default, as on NewPolicyBuilder.
//
// Strict means that these are errors. They are an unknown field, a field
// given twice, a value of the wrong type or range, and a limit below its
// least value. So are weights without "isolation": "fair-share", anything
// after the policy object, a document that is not valid UTF-8 (a key
// JSON cannot carry as it is), and a \u escape of half a UTF-16
// surrogate pair alone, which JSON would read as U+FFFD. The error wraps
// ErrInvalidPolicy and names the JSON path of each bad value it found, e.g.
// `perGroupMaxConcurrency["a"]: -1 is below 1`. It names the first 20,
// and how many more. A syntax error stops the reading at its byte offset.
// The bad values found before it, or before data after the object, are
// named too.
// It quotes a name or value it repeats, and cuts it to 64 bytes. So no
// control character or megabyte of the input reaches a log. A field name
// that is a plain word stays bare.
//
// YAML works by converting it to JSON first, for example with
// sigs.k8s.io/yaml's YAMLToJSON. This package depends on no YAML library.
func ParsePolicy(data []byte) (*PolicyBuilder, error) {
	// encoding/json reads a byte that is not UTF-8 as U+FFFD. A key would
	// then name another group, and a separator another string.
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return nil, fmt.Errorf("%w: the document is not valid UTF-8 (byte %d)", ErrInvalidPolicy, i)
	}
	// It reads a \u escape of half a UTF-16 pair, alone, as U+FFFD too.
	if i, ok := loneSurrogate(data); ok {
		return nil, fmt.Errorf("%w: the document escapes half a UTF-16 surrogate pair, %s, alone (byte %d)", ErrInvalidPolicy, data[i:i+6], i)
	}
	r := &policyReader{dec: json.NewDecoder(bytes.NewReader(data)), b: NewPolicyBuilder()}
	r.dec.UseNumber()
	if err := r.policy(); err != nil {
		if len(r.bad) > 0 { // found before the reading stopped
			return nil, fmt.Errorf("%w: %v; %s", ErrInvalidPolicy, err, r.badValues())
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	if len(r.bad) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidPolicy, r.badValues())
	}
	return r.b, nil
}

// loneSurrogate returns the offset of the first \u escape in a string of
// data that is half a UTF-16 surrogate pair without its other half.
func loneSurrogate(data []byte) (int, bool) {
	in := false // inside a string
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			in = !in
		case c != '\\' || !in: // nothing to look at
		case i+1 < len(data) && data[i+1] != 'u':
			i++ // an escape of one character
		default:
			r, ok := escaped(data, i)
			if !ok {
				continue // a syntax error, which the reading reports
			}
			if utf16.IsSurrogate(r) {
				lo, ok := escaped(data, i+6)
				if r >= 0xdc00 || !ok || lo < 0xdc00 || lo > 0xdfff {
					return i, true
				}
				i += 6
			}
			i += 5
		}
	}
	return 0, false
}

// escaped returns the rune of the \u escape at data[i:], if there is one.
func escaped(data []byte, i int) (rune, bool) {
	if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
	return rune(n), err == nil
}

// policy reads the whole document.
func (r *policyReader) policy() error {
	seen := map[string]bool{}
	isFair, weighted := false, []string(nil)
	globalQueue := Unlimited
	err := r.object("policy", func(field string) error {
		seen[field] = true
		switch field {
		case "globalMaxInFlight":
			return r.limit(field, 1, func(n int) { r.b.GlobalMaxInFlight(n) })
		case "globalQueueThreshold":
			return r.limit(field, 0, func(n int) { globalQueue = n; r.b.GlobalQueueThreshold(n) })
		case "defaultMaxConcurrencyPerGroup":
			return r.limit(field, 1, func(n int) { r.b.DefaultMaxConcurrencyPerGroup(n) })
		case "perGroupMaxConcurrency":
			return r.limits(field, 1, true, func(m map[string]int) { r.b.PerGroupMaxConcurrency(m) })
		case "defaultMaxInFlightPerGroup":
			return r.limit(field, 1, func(n int) { r.b.DefaultMaxInFlightPerGroup(n) })
		case "perGroupMaxInFlight":
			return r.limits(field, 1, true, func(m map[string]int) { r.b.PerGroupMaxInFlight(m) })
		case "defaultQueueThresholdPerGroup":
			return r.limit(field, 0, func(n int) { r.b.DefaultQueueThresholdPerGroup(n) })
		case "perGroupQueueThreshold":
			return r.limits(field, 0, true, func(m map[string]int) { r.b.PerGroupQueueThreshold(m) })
		case "defaultWeightPerGroup":
			weighted = append(weighted, field)
			return r.number(field, 1, func(n int) { r.b.DefaultWeightPerGroup(n) })
		case "perGroupWeight":
			weighted = append(weighted, field)
			return r.limits(field, 1, false, func(m map[string]int) { r.b.PerGroupWeight(m) })
		case "rejectionPolicy":
			return r.name(field, func(s string) bool {
				for _, n := range rejectionNames {
					if n.name == s {
						r.b.RejectionPolicy(n.p)
						return true
					}
				}
				return false
			}, `"abort", "discard", "callerRuns" or "discardOldest"`)
		case "isolation":
			return r.name(field, func(s string) bool {
				for _, n := range isolationNames {
					if n.name == s {
						isFair = n.m == IsolationFairShare
						r.b.Isolation(n.m)
						return true
					}
				}
				return false
			}, `"off" or "fair-share"`)
		case "idleGroupTTL":
			return r.duration(field, func(d time.Duration) { r.b.IdleGroupTTL(d) })
		case "parentSeparator":
			return r.text(field, func(s string) {
				if s == "" {
					r.fail(field, `empty, want a separator such as "/"`)
				}
				r.b.ParentSeparator(s)
			})
		case "pressure":
			return r.pressure(field)
		}
		r.fail(word(field), "unknown field")
		return r.skip()
	})
	if err != nil {
		return err
	}
	if !isFair {
		for _, f := range weighted {
			r.fail(f, `weights need "isolation": "fair-share"`)
		}
	}
	if isFair && seen["globalQueueThreshold"] && globalQueue != Unlimited {
		r.fail("globalQueueThreshold", `%d under "isolation": "fair-share", want "unlimited": the per-group threshold bounds the global wait`, globalQueue)
	}
	// Anything after the object, but white space, is an error.
	if _, err := r.dec.Token(); err != io.EOF {
		return errors.New("policy: data after the policy object")
	}
	return nil
}

// pressure reads the "pressure" object into the builder's config.
func (r *policyReader) pressure(path string) error {
	var cfg PressureConfig
	err := r.object(path, func(field string) error {
		p := member(path, word(field))
		switch field {
		case "backlogCount":
			return r.number(p, 0, func(n int) { cfg.BacklogCount = n })
		case "backlogAge":
			return r.duration(p, func(d time.Duration) { cfg.BacklogAge = d })
		case "cooldown":
			return r.duration(p, func(d time.Duration) { cfg.Cooldown = d })
		}
		r.fail(p, "unknown field")
		return r.skip()
	})
	r.b.pressure = cfg
	return err
}
