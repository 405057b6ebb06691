package groupconc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// policyJSON is the JSON form of a policy as MarshalJSON writes it (see
// ParsePolicy for the format).
type policyJSON struct {
	GlobalMaxInFlight             jsonLimit            `json:"globalMaxInFlight"`
	GlobalQueueThreshold          jsonLimit            `json:"globalQueueThreshold"`
	DefaultMaxConcurrencyPerGroup *jsonLimit           `json:"defaultMaxConcurrencyPerGroup,omitempty"`
	PerGroupMaxConcurrency        map[string]jsonLimit `json:"perGroupMaxConcurrency,omitempty"`
	DefaultMaxInFlightPerGroup    *jsonLimit           `json:"defaultMaxInFlightPerGroup,omitempty"`
	PerGroupMaxInFlight           map[string]jsonLimit `json:"perGroupMaxInFlight,omitempty"`
	DefaultQueueThresholdPerGroup *jsonLimit           `json:"defaultQueueThresholdPerGroup,omitempty"`
	PerGroupQueueThreshold        map[string]jsonLimit `json:"perGroupQueueThreshold,omitempty"`
	RejectionPolicy               string               `json:"rejectionPolicy"`
	Isolation                     string               `json:"isolation"`
	DefaultWeightPerGroup         *int                 `json:"defaultWeightPerGroup,omitempty"`
	PerGroupWeight                map[string]int       `json:"perGroupWeight,omitempty"`
	IdleGroupTTL                  string               `json:"idleGroupTTL"`
	ParentSeparator               string               `json:"parentSeparator,omitempty"`
	Pressure                      *pressureJSON        `json:"pressure,omitempty"`
}

type pressureJSON struct {
	BacklogCount int    `json:"backlogCount,omitempty"`
	BacklogAge   string `json:"backlogAge,omitempty"`
	Cooldown     string `json:"cooldown,omitempty"`
}

// jsonLimit writes Unlimited as "unlimited".
type jsonLimit int

// MarshalJSON writes n as a number, or Unlimited as "unlimited".
func (n jsonLimit) MarshalJSON() ([]byte, error) {
	if n == Unlimited {
		return []byte(`"unlimited"`), nil
	}
	return strconv.AppendInt(nil, int64(n), 10), nil
}

// MarshalJSON writes the policy's data part in the form ParsePolicy reads.
// That is every setting but the code hooks (resolvers, ParentResolver
// included, rejection handler, listener, pressure warning function), which
// it leaves out. Adaptive limits are left out whole, since an
// AdaptiveConfig's New is code. The global limits, rejection policy,
// isolation and idle TTL are always written. A Default…PerGroup setting is
// written only if it was set, so that the library's default stays
// "builtin" to Explain. A map is written only if it has entries,
// "parentSeparator" only if set, and "pressure" only if a field of its
// config is set. Map keys come sorted, so equal policies give equal bytes.
// A nil policy writes DefaultPolicy.
//
// So ParsePolicy of the result builds a policy with the same limits. It
// gives the same parents and explanations for every key its resolvers do
// not decide. A group key or separator that is not valid UTF-8 has no JSON
// form. MarshalJSON then writes nothing and returns an error naming it.
//
// A GroupPolicy has no UnmarshalJSON, as it is built, not decoded.
// json.Unmarshal into one leaves a policy that New reads as DefaultPolicy.
// Read the JSON with ParsePolicy, and Build.
func (p *GroupPolicy) MarshalJSON() ([]byte, error) {
	p = p.orDefault()
	for _, m := range []struct {
		field string
		keys  map[string]int
	}{
		{"perGroupMaxConcurrency", p.concurrency},
		{"perGroupMaxInFlight", p.inFlight},
		{"perGroupQueueThreshold", p.queue},
		{"perGroupWeight", p.weights},
	} {
		if k, ok := badKey(m.keys); ok {
			return nil, fmt.Errorf("groupconc: MarshalJSON: %s key %s is not valid UTF-8, which JSON cannot hold", m.field, quoted(k))
		}
	}
	if !utf8.ValidString(p.parentSeparator) {
		return nil, fmt.Errorf("groupconc: MarshalJSON: parentSeparator %s is not valid UTF-8, which JSON cannot hold", quoted(p.parentSeparator))
	}
	j := policyJSON{
		GlobalMaxInFlight:             jsonLimit(p.globalInFlight),
		GlobalQueueThreshold:          jsonLimit(p.globalQueue),
		DefaultMaxConcurrencyPerGroup: setLimit(p.set&setConc != 0, p.defaultConc),
		PerGroupMaxConcurrency:        limitMap(p.concurrency),
		DefaultMaxInFlightPerGroup:    setLimit(p.set&setInFlight != 0, p.defaultInFlight),
		PerGroupMaxInFlight:           limitMap(p.inFlight),
		DefaultQueueThresholdPerGroup: setLimit(p.set&setQueue != 0, p.defaultQueue),
		PerGroupQueueThreshold:        limitMap(p.queue),
		RejectionPolicy:               p.rejection.String(),
		Isolation:                     p.isolation.String(),
		IdleGroupTTL:                  p.idleTTL.String(),
		ParentSeparator:               p.parentSeparator,
	}
	for _, n := range rejectionNames {
		if n.p == p.rejection {
			j.RejectionPolicy = n.name
		}
	}
	if p.set&setWeight != 0 {
		j.DefaultWeightPerGroup = &p.defaultWeight
	}
	if len(p.weights) > 0 {
		j.PerGroupWeight = p.weights
	}
	if c := p.pressure; c != (PressureConfig{}) {
		j.Pressure = &pressureJSON{BacklogCount: c.BacklogCount}
		if c.BacklogAge != 0 {
			j.Pressure.BacklogAge = c.BacklogAge.String()
		}
		if c.Cooldown != 0 {
			j.Pressure.Cooldown = c.Cooldown.String()
		}
	}
	return json.Marshal(j)
}

func setLimit(set bool, n int) *jsonLimit {
	if !set {
		return nil
	}
	l := jsonLimit(n)
	return &l
}

func limitMap(m map[string]int) map[string]jsonLimit {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]jsonLimit, len(m))
	for k, v := range m {
		out[k] = jsonLimit(v)
	}
	return out
}

// badKey returns the least key of m that is not valid UTF-8, if any.
// encoding/json would write each such byte as U+FFFD. The key would lose
// its limit, or two keys would become one.
func badKey(m map[string]int) (key string, ok bool) {
	for k := range m {
		if !utf8.ValidString(k) && (!ok || k < key) {
			key, ok = k, true
		}
	}
	return key, ok
}
