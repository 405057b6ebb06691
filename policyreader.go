package groupconc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// policyReader walks a policy's JSON token by token, so that every error can
// name its path. Structural errors end the walk. Bad values are collected in
// bad and the walk goes on.
type policyReader struct {
	dec  *json.Decoder
	b    *PolicyBuilder
	bad  []string
	more int // bad values past maxBadValues, counted only
}

// maxBadValues is how many bad values an error names. So a document of a
// million bad keys makes an error of a few kilobytes.
const maxBadValues = 20

func (r *policyReader) fail(path, format string, args ...any) {
	if len(r.bad) == maxBadValues {
		r.more++
		return
	}
	r.bad = append(r.bad, path+": "+fmt.Sprintf(format, args...))
}

// badValues returns the bad values found, as the error lists them.
func (r *policyReader) badValues() string {
	s := strings.Join(r.bad, "; ")
	if r.more > 0 {
		s += fmt.Sprintf("; and %d more", r.more)
	}
	return s
}

// object reads an object at path, calling field for each member with the
// decoder on its value. A member given twice is a bad value.
func (r *policyReader) object(path string, field func(name string) error) error {
	tok, err := r.token(path)
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		r.fail(path, "%s is not an object", describe(tok))
		return r.skipRest(tok)
	}
	seen := map[string]bool{}
	for r.dec.More() {
		tok, err := r.token(path)
		if err != nil {
			return err
		}
		name := tok.(string) // the decoder allows only strings as keys
		if seen[name] {
			r.fail(member(path, word(name)), "given twice")
			if err := r.skip(); err != nil {
				return err
			}
			continue
		}
		seen[name] = true
		if err := field(name); err != nil {
			return err
		}
	}
	_, err = r.token(path) // the closing brace
	return err
}

// member returns the path of an object's member. The top level's fields are
// bare, and others come after a dot. The name is as word gives it.
func member(path, name string) string {
	if path == "policy" {
		return name
	}
	return path + "." + name
}

// limits reads a map of group keys to limits (or, !unlimited, to numbers).
func (r *policyReader) limits(path string, least int, unlimited bool, set func(map[string]int)) error {
	m := map[string]int{}
	ok := true
	tok, err := r.token(path)
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		r.fail(path, "%s is not an object of group keys", describe(tok))
		return r.skipRest(tok)
	}
	for r.dec.More() {
		tok, err := r.token(path)
		if err != nil {
			return err
		}
		key := tok.(string)
		p := path + "[" + quoted(key) + "]"
		switch _, dup := m[key]; {
		case key == "":
			r.fail(p, "empty group key")
			ok = false
		case dup:
			r.fail(p, "given twice")
			ok = false
		}
		read := r.limit
		if !unlimited {
			read = r.number
		}
		m[key] = 0
		if err := read(p, least, func(n int) { m[key] = n }); err != nil {
			return err
		}
	}
	if _, err := r.token(path); err != nil {
		return err
	}
	if ok {
		set(m)
	}
	return nil
}

// limit reads a whole number >= least, or "unlimited", and passes it to set.
func (r *policyReader) limit(path string, least int, set func(int)) error {
	return r.int(path, least, true, set)
}

// number reads a whole number >= least and passes it to set.
func (r *policyReader) number(path string, least int, set func(int)) error {
	return r.int(path, least, false, set)
}

func (r *policyReader) int(path string, least int, unlimited bool, set func(int)) error {
	tok, err := r.token(path)
	if err != nil {
		return err
	}
	want := "a whole number"
	if unlimited {
		want = `a whole number or "unlimited"`
	}
	switch v := tok.(type) {
	case json.Number:
		n, err := strconv.Atoi(v.String())
		switch {
		case errors.Is(err, strconv.ErrRange):
			r.fail(path, "%s is out of range", cut(v.String()))
		case err != nil:
			r.fail(path, "%s is not %s", cut(v.String()), want)
		case n < least:
			r.fail(path, "%d is below %d", n, least)
		default:
			set(n)
		}
		return nil
	case string:
		if unlimited && v == "unlimited" {
			set(Unlimited)
		} else {
			r.fail(path, "%s is not %s", quoted(v), want)
		}
		return nil
	}
	r.fail(path, "%s is not %s", describe(tok), want)
	return r.skipRest(tok)
}

// duration reads a Go duration string >= 0 and passes it to set.
func (r *policyReader) duration(path string, set func(time.Duration)) error {
	tok, err := r.token(path)
	if err != nil {
		return err
	}
	s, ok := tok.(string)
	if !ok {
		r.fail(path, `%s is not a Go duration string such as "90s"`, describe(tok))
		return r.skipRest(tok)
	}
	switch d, err := time.ParseDuration(s); {
	case err != nil:
		r.fail(path, `%s is not a Go duration such as "90s"`, quoted(s))
	case d < 0:
		r.fail(path, "%s is below 0", quoted(s))
	default:
		set(d)
	}
	return nil
}

// text reads a string and passes it to set.
func (r *policyReader) text(path string, set func(string)) error {
	tok, err := r.token(path)
	if err != nil {
		return err
	}
	s, ok := tok.(string)
	if !ok {
		r.fail(path, "%s is not a string", describe(tok))
		return r.skipRest(tok)
	}
	set(s)
	return nil
}

// name reads a string that pick accepts. The want list holds the accepted
// ones.
func (r *policyReader) name(path string, pick func(string) bool, want string) error {
	tok, err := r.token(path)
	if err != nil {
		return err
	}
	s, ok := tok.(string)
	if !ok {
		r.fail(path, "%s is not one of %s", describe(tok), want)
		return r.skipRest(tok)
	}
	if !pick(s) {
		r.fail(path, "%s is not one of %s", quoted(s), want)
	}
	return nil
}

// token reads the next token. A syntax error names path and its offset.
func (r *policyReader) token(path string) (json.Token, error) {
	tok, err := r.dec.Token()
	var syntax *json.SyntaxError
	switch {
	case err == nil:
		return tok, nil
	case errors.As(err, &syntax):
		return nil, fmt.Errorf("%s: JSON syntax error at byte %d: %v", path, syntax.Offset, err)
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%s: the JSON ends early", path)
	}
	return nil, fmt.Errorf("%s: %v", path, err)
}

// skip reads and drops one value.
func (r *policyReader) skip() error {
	tok, err := r.token("skipped value")
	if err != nil {
		return err
	}
	return r.skipRest(tok)
}

// skipRest drops the rest of the value that tok began.
func (r *policyReader) skipRest(tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		tok, err := r.token("skipped value")
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// describe names a token's kind, or its value quoted and cut, in an
// error.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case string:
		return quoted(v)
	}
	return cut(fmt.Sprint(tok))
}
