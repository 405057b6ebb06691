package httpgc

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A browser sets Host from the URL it fetches, and a script cannot change
// it. A page whose name an attacker rebinds to 127.0.0.1 still sends its
// own name. So a request is served only if its Host names this machine or
// a name the application chose. The Origin check for writes then compares
// with a Host that can be trusted.

// hosts is the set of names a request's Host may carry besides loopback,
// each normalised by hostName.
type hosts map[string]struct{}

// newHosts checks and normalises Options.AllowedHosts. It returns one
// message per entry that no Host could match.
func newHosts(list []string) (hosts, []string) {
	set := hosts{}
	var bad []string
	for i, entry := range list {
		name, ok := entryName(entry)
		if !ok {
			bad = append(bad, fmt.Sprintf("AllowedHosts[%d] is %s, want a host name or IP address with no port", i, quoted(entry)))
			continue
		}
		set[name] = struct{}{}
	}
	return set, bad
}

// entryName normalises an AllowedHosts entry. An IPv6 address may come
// with or without brackets.
func entryName(entry string) (string, bool) {
	if strings.HasPrefix(entry, "[") && strings.HasSuffix(entry, "]") {
		return hostName(entry)
	}
	if ip, err := netip.ParseAddr(entry); err == nil && ip.Zone() == "" {
		return ip.Unmap().String(), true
	}
	return dnsName(entry)
}

// allows reports whether hostport, a request's Host, names a loopback
// host or one of s.
func (s hosts) allows(hostport string) bool {
	name, ok := hostName(hostport)
	if !ok {
		return false
	}
	if name == "localhost" {
		return true
	}
	if ip, err := netip.ParseAddr(name); err == nil && ip.IsLoopback() {
		return true
	}
	_, ok = s[name]
	return ok
}

// hostName returns the host a Host header names, normalised as an
// AllowedHosts entry is, and false for one that names no host. A port,
// if any, is ignored. An IPv6 address must be in brackets.
func hostName(hostport string) (string, bool) {
	host, port := hostport, ""
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", false
		}
		host, port = hostport[1:end], hostport[end+1:]
		if port != "" && port[0] != ':' {
			return "", false
		}
	} else if i := strings.IndexByte(hostport, ':'); i >= 0 {
		host, port = hostport[:i], hostport[i:]
	}
	if port != "" {
		if n, err := strconv.ParseUint("0"+port[1:], 10, 16); err != nil || n > 65535 {
			return "", false
		}
	}
	if strings.HasPrefix(hostport, "[") {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", false
		}
		return ip.Unmap().String(), true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.String(), true
	}
	return dnsName(host)
}

// dnsName returns name in lower case without its trailing dot. It returns
// false unless name is a plain DNS name, whose labels hold letters, digits,
// '-' and '_'. An internationalised name must be in its ASCII (punycode)
// form, as a browser sends it.
func dnsName(name string) (string, bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" || len(name) > 253 {
		return "", false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return "", false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	return name, true
}

// maxEcho is how many bytes of a request's input an error message repeats.
const maxEcho = 200

// quoted returns s as a Go string literal for an error message. A longer
// s is cut to maxEcho bytes, and an ellipsis after the quote says so.
func quoted(s string) string {
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	n := maxEcho
	for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); i++ {
		n-- // cut before a rune, not through it
	}
	return strconv.Quote(s[:n]) + "…"
}

// visible returns msg with each character strconv.Quote escapes, but for
// quotes and backslashes, escaped as it does (\u200b, \u202e, \t, \xff).
// Keys in errors are quoted already. A guard's message may repeat a key as
// it is, and so may a DisplayKey's name, and then its invisible or bidi
// characters would hide in the dashboard's notice or reorder it.
func visible(msg string) string {
	hidden := func(r rune) bool { return r != ' ' && !strconv.IsPrint(r) }
	if utf8.ValidString(msg) && !strings.ContainsFunc(msg, hidden) {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		r, n := utf8.DecodeRuneInString(msg[i:])
		if r == utf8.RuneError && n == 1 || hidden(r) {
			q := strconv.Quote(msg[i : i+n])
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(msg[i : i+n])
		}
		i += n
	}
	return b.String()
}
