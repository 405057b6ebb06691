package groupconc

import (
	"strconv"
	"unicode/utf8"
)

// echoMax is the most bytes of a caller's string that an error repeats.
// The string may be megabytes long, or a key read from a request.
const echoMax = 64

// quoted returns s for an error message, quoted as %q quotes it. So no
// control character or invalid byte reaches a log. A longer s is cut to
// echoMax bytes, and its length said.
func quoted(s string) string {
	if len(s) <= echoMax {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cutAt(s)]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// cut cuts a string that needs no quoting, such as a JSON number, as
// quoted does.
func cut(s string) string {
	if len(s) <= echoMax {
		return s
	}
	return s[:cutAt(s)] + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// cutAt returns where to cut s, longer than echoMax, but not inside a rune.
func cutAt(s string) int {
	n := echoMax
	for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return n
}

// word returns s for an error message. A word of ASCII letters, digits
// and underscores stays bare, such as a JSON field name or a reason.
// Anything else is quoted. So a path reads as jq writes one:
// pressure.cooldown, pressure."a b".
func word(s string) string {
	if s == "" || len(s) > echoMax {
		return quoted(s)
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return quoted(s)
		}
	}
	return s
}
