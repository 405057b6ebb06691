package httpgc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/kobe/groupconc"
)

// maxProblems is how many problems with a body an error message lists.
const maxProblems = 8

// patchFields are the fields a PATCH may name, with the least value each
// takes and whether it may be "unlimited".
var patchFields = map[string]struct {
	least     int
	unlimited bool
	field     func(*groupconc.GroupOverride) **int
}{
	"maxConcurrency": {1, true, func(o *groupconc.GroupOverride) **int { return &o.MaxConcurrency }},
	"maxInFlight":    {1, true, func(o *groupconc.GroupOverride) **int { return &o.MaxInFlight }},
	"queueThreshold": {0, true, func(o *groupconc.GroupOverride) **int { return &o.QueueThreshold }},
	"weight":         {1, false, func(o *groupconc.GroupOverride) **int { return &o.Weight }},
}

// patch applies a JSON merge patch (RFC 7396) to the group's overrides. A
// field set to a value overrides that limit, and one set to null drops
// its override. An absent field is left as it is. "paused" takes true,
// false or null. The whole patch is checked before anything changes.
func (h *Handler) patch(w http.ResponseWriter, r *http.Request, body []byte) {
	var fields map[string]json.RawMessage
	if status, err := decodeObject(body, &fields); err != nil {
		fail(w, status, err.Error())
		return
	}
	var bad []string
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if name == "paused" {
			if _, err := parsePaused(fields[name]); err != nil {
				bad = append(bad, name+": "+err.Error())
			}
			continue
		}
		f, ok := patchFields[name]
		if !ok {
			bad = append(bad, "unknown field "+quoted(name)+", want maxConcurrency, maxInFlight, queueThreshold, weight or paused")
			continue
		}
		if _, err := parseValue(fields[name], f.least, f.unlimited); err != nil {
			bad = append(bad, name+": "+err.Error())
		}
	}
	if len(bad) > maxProblems {
		bad = append(bad[:maxProblems], fmt.Sprintf("and %d more", len(bad)-maxProblems))
	}
	if len(bad) > 0 {
		fail(w, http.StatusUnprocessableEntity, strings.Join(bad, "; "))
		return
	}

	st, name, ok := h.lookup(w, r)
	if !ok {
		return
	}
	ev := h.apply(r, ActionPatch, st, func(next groupconc.GroupOverride) error {
		for name, raw := range fields {
			if name == "paused" {
				next.Paused, _ = parsePaused(raw)
				continue
			}
			f := patchFields[name]
			v, _ := parseValue(raw, f.least, f.unlimited)
			*f.field(&next) = v
		}
		return h.e.SetGroupOverride(st.GroupKey, next)
	})
	leave(w, ev)
	if ev.Err != nil {
		h.failWrite(w, ev.Err, st.GroupKey, name, fields)
		return
	}
	reply(w, http.StatusOK, h.row(ev.After, name, h.e.GroupStats))
}

// evict evicts the group and writes 204, as the group is gone.
func (h *Handler) evict(w http.ResponseWriter, r *http.Request, body []byte) {
	if h.emptyBody(w, body) {
		h.act(w, r, ActionEvict, h.e.EvictGroup)
	}
}

// shutdown cancels the group's tasks and writes the group's row after it.
func (h *Handler) shutdown(w http.ResponseWriter, r *http.Request, body []byte) {
	if h.emptyBody(w, body) {
		h.act(w, r, ActionShutdown, h.e.ShutdownGroup)
	}
}

func (h *Handler) act(w http.ResponseWriter, r *http.Request, a Action, fn func(string)) {
	st, name, ok := h.lookup(w, r)
	if !ok {
		return
	}
	ev := h.apply(r, a, st, func(groupconc.GroupOverride) error {
		fn(st.GroupKey)
		return nil
	})
	leave(w, ev)
	if a == ActionEvict {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	reply(w, http.StatusOK, h.row(ev.After, name, h.e.GroupStats))
}

// emptyBody reports whether body is empty or {}. If not, it writes 422.
func (h *Handler) emptyBody(w http.ResponseWriter, body []byte) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	var fields map[string]json.RawMessage
	if status, err := decodeObject(body, &fields); err != nil {
		fail(w, status, err.Error())
		return false
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		fail(w, http.StatusUnprocessableEntity, "unknown field "+quoted(name)+", want an empty body or {}")
		return false
	}
	return true
}

// failWrite answers a write to the group of key, shown as name, that the
// executor refused. The executor's own message for a group gone names its
// key, which a DisplayKey hides. A refusal's text, a guard's say, may
// quote the key too. Under a DisplayKey it shows name there (hideKey). A
// value refused is named as fields, the patch's body, named it (see
// refusedFields).
func (h *Handler) failWrite(w http.ResponseWriter, err error, key, name string, fields map[string]json.RawMessage) {
	msg := err.Error()
	if h.o.DisplayKey != nil {
		msg = hideKey(msg, key, name)
	}
	switch {
	case errors.Is(err, groupconc.ErrInvalidPolicy):
		fail(w, http.StatusUnprocessableEntity, refusedFields(err, fields)+msg)
	case errors.Is(err, groupconc.ErrUnknownGroup):
		fail(w, http.StatusNotFound, "no group "+quoted(name))
	case errors.Is(err, groupconc.ErrClosed):
		fail(w, http.StatusServiceUnavailable, msg)
	default:
		fail(w, http.StatusConflict, msg)
	}
}

// hideKey returns msg with key replaced by name where msg quotes it as Go
// does (%q, strconv.Quote), whole or cut short as long keys are in errors
// (from its first 16 bytes on), and where it holds the whole key as it is
// if that is 8 bytes or more. A shorter key as it is cannot be told from
// the words around it.
func hideKey(msg, key, name string) string {
	q := strconv.Quote(key)
	inner := q[1 : len(q)-1]
	head := `"` + inner[:min(len(inner), 16)]
	var b strings.Builder
	for {
		i := strings.Index(msg, head)
		if i < 0 {
			break
		}
		n := len(head) // the quote and the bytes of inner matched so far
		for n-1 < len(inner) && i+n < len(msg) && msg[i+n] == inner[n-1] {
			n++
		}
		if i+n < len(msg) && msg[i+n] == '"' {
			b.WriteString(msg[:i])
			b.WriteString(strconv.Quote(name))
			msg = msg[i+n+1:]
			continue
		}
		b.WriteString(msg[:i+1]) // not a quoted key: keep it, and look on
		msg = msg[i+1:]
	}
	b.WriteString(msg)
	out := b.String()
	if len(key) >= 8 {
		out = strings.ReplaceAll(out, key, name)
	}
	return out
}

// refusedFields names the fields of a patch that the executor's refusal
// err speaks of, with the values sent, as "weight \"2\": ". The executor
// names a limit by its Go field (Weight), a patch by its JSON one (weight).
// So the answer names each refused value as the request did.
func refusedFields(err error, fields map[string]json.RawMessage) string {
	msg := strings.ToLower(err.Error())
	var named []string
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if strings.Contains(msg, strings.ToLower(name)) {
			named = append(named, name+" "+quoted(string(bytes.TrimSpace(fields[name]))))
		}
	}
	if len(named) == 0 {
		return ""
	}
	return strings.Join(named, ", ") + ": "
}

// decodeObject decodes body, one JSON object and only JSON whitespace
// after it, into v. It gives 400 for malformed JSON or anything after the
// object, and 422 for JSON that is not an object or names a field twice.
// A decoder keeps the last of a repeated field, so a bad value followed by
// a good one would never be checked.
func decodeObject(body []byte, v *map[string]json.RawMessage) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return http.StatusBadRequest, fmt.Errorf("malformed JSON: %v", err)
	}
	// dec.More reports false at a ']' or '}', so look at the bytes left.
	if len(bytes.Trim(body[dec.InputOffset():], " \t\r\n")) > 0 {
		return http.StatusBadRequest, errors.New("malformed JSON: more after the object")
	}
	dec = json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return http.StatusUnprocessableEntity, errors.New("the body is not a JSON object")
	}
	fields := map[string]json.RawMessage{}
	repeated := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		name, _ := tok.(string)
		var value json.RawMessage
		if err == nil {
			err = dec.Decode(&value)
		}
		if err != nil { // raw is valid JSON, so this is never expected
			return http.StatusBadRequest, fmt.Errorf("malformed JSON: %v", err)
		}
		if _, ok := fields[name]; ok {
			repeated[name] = true
		}
		fields[name] = value
	}
	if len(repeated) > 0 {
		var bad []string
		for _, name := range slices.Sorted(maps.Keys(repeated)) {
			bad = append(bad, "repeated field "+quoted(name)+", want each field once")
		}
		if len(bad) > maxProblems {
			bad = append(bad[:maxProblems], fmt.Sprintf("and %d more", len(bad)-maxProblems))
		}
		return http.StatusUnprocessableEntity, errors.New(strings.Join(bad, "; "))
	}
	*v = fields
	return 0, nil
}

// parseValue reads a patch value. It gives nil for null, Unlimited for
// "unlimited" (if allowed), and otherwise an integer >= least.
func parseValue(raw json.RawMessage, least int, unlimited bool) (*int, error) {
	want := fmt.Sprintf("want an integer >= %d", least)
	if unlimited {
		want += `, "unlimited" or null`
	} else {
		want += " or null"
	}
	raw = bytes.TrimSpace(raw)
	switch {
	case string(raw) == "null":
		return nil, nil
	case unlimited && string(raw) == `"unlimited"`:
		n := groupconc.Unlimited
		return &n, nil
	}
	var num json.Number
	if err := json.Unmarshal(raw, &num); err != nil || !strings.ContainsAny(string(raw[:1]), "-0123456789") {
		return nil, fmt.Errorf("%s is not a value, %s", quoted(string(raw)), want)
	}
	n, err := num.Int64()
	if err != nil || n < int64(least) || n > int64(groupconc.Unlimited) {
		return nil, fmt.Errorf("%s is out of range, %s", quoted(string(raw)), want)
	}
	v := int(n)
	return &v, nil
}

// parsePaused reads "paused", which is true, false, or null (no override).
func parsePaused(raw json.RawMessage) (*bool, error) {
	switch string(raw) {
	case "null":
		return nil, nil
	case "true", "false":
		b := string(raw) == "true"
		return &b, nil
	}
	return nil, fmt.Errorf("got %s, want true, false or null", quoted(string(raw)))
}
