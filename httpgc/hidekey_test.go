package httpgc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// hideKey replaces the key where a message quotes it, whole or cut short
// after 16 bytes or more, and where it holds it as it is when it is 8
// bytes or more. Other quoted strings stay, and so does a message that
// ends inside a quote.
func TestHideKeyReplacesTheKeyWhereTheMessageHoldsIt(t *testing.T) {
	const long = "abcdefghijklmnopqrst" // 20 bytes
	const tabbed = "tenant\t0123456789xyz"
	for _, c := range []struct {
		name, key, msg, want string
	}{
		{"a short key quoted", "bob", `group "bob" is full`, `group "h-1" is full`},
		{"quoted at the start", "bob", `"bob" is full`, `"h-1" is full`},
		{"quoted twice", "bob", `"bob" and "bob"`, `"h-1" and "h-1"`},
		{"other quoted strings", "bob", `field "" of "bo" and "bobby" in "bob"`, `field "" of "bo" and "bobby" in "h-1"`},
		{"a message ending inside a quote", long, `group "abcdefghijklmnopq`, `group "abcdefghijklmnopq`},
		{"cut after 16 bytes", long, `group "abcdefghijklmnop"... (20 bytes)`, `group "h-1"... (20 bytes)`},
		{"cut after 15 bytes", long, `group "abcdefghijklmno"...`, `group "abcdefghijklmno"...`},
		{"a long key quoted with escapes", tabbed, fmt.Sprintf("group %q is full", tabbed), `group "h-1" is full`},
		{"8 bytes as they are", "abcdefgh", `group abcdefgh is full`, `group h-1 is full`},
		{"7 bytes as they are", "abcdefg", `group abcdefg is full`, `group abcdefg is full`},
	} {
		assert.Equal(t, c.want, hideKey(c.msg, c.key, "h-1"), c.name)
	}
}
