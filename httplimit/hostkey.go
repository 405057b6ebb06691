package httplimit

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrHostNotASCII is the error of a request that Transport, with a nil
// Key, does not send because its host is not all ASCII. http.Transport
// maps such a host to its ASCII form through IDNA, which HostKey cannot
// do. So one host could be two groups. Write the host in its ASCII
// (punycode, "xn--") form, or set Transport.Key.
var ErrHostNotASCII = errors.New("httplimit: the request's host is not ASCII, so HostKey cannot key it; " +
	"write the host in its ASCII (punycode) form, or set Transport.Key")

// HostKey returns the host and port req is sent to, as "host:port". It is
// Transport's default key. The port is the one the URL names, or the
// scheme's (http 80, https 443) if it names none.
//
// Some spellings of one host give one key.
//   - The host is in lower case, but for an IPv6 zone, which names an
//     interface.
//   - A default port written or left out is the same port, and so is a
//     port written with leading zeros.
//   - One trailing dot of a host name is dropped, so "example.com." is
//     "example.com".
//   - An IP address is in its canonical form, with its zone if it has
//     one. So "[0:0::1]" is "[::1]", and "[::ffff:127.0.0.1]" is
//     "127.0.0.1". So are the numbers of inet_aton, which a resolver of
//     the C library dials, so "127.1" and "0x7f.0.0.1" are "127.0.0.1".
//
// HostKey returns "" for a request with no URL or no host, and for a host
// that is not all ASCII. http.Transport maps such a host through IDNA,
// which the standard library does not export. So Transport with a nil Key
// does not send such a request. It returns a *NotSentError of
// ErrHostNotASCII.
//
// The key is the name in the URL, not the addresses it resolves to. Two
// names of one address, such as "localhost" and "127.0.0.1", are two
// groups, and so are "0.0.0.0" and "127.0.0.1", though a dial of the first
// reaches this host. A limit set for a key is set for its canonical form.
// "[::ffff:10.0.0.1]:443" names no group, "10.0.0.1:443" does.
func HostKey(req *http.Request) string {
	key, _ := hostKey(req)
	return key
}

// hostKey returns HostKey's key of req, and if it is "", why.
func hostKey(req *http.Request) (string, error) {
	u := req.URL
	if u == nil || u.Host == "" { // http.Transport refuses a nil URL too
		return "", ErrNoKey
	}
	for i := 0; i < len(u.Host); i++ {
		if u.Host[i] >= utf8.RuneSelf {
			return "", ErrHostNotASCII
		}
	}
	host := canonicalHost(lowerHost(u.Hostname()))
	port := u.Port()
	if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		port = strconv.FormatUint(n, 10)
	}
	if port == "" {
		switch u.Scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		default:
			if strings.Contains(host, ":") {
				return "[" + host + "]", nil
			}
			return host, nil
		}
	}
	return net.JoinHostPort(host, port), nil
}

// lowerHost returns host in lower case, but for an IPv6 zone. A zone
// names an interface, and Linux tells "eth0" and "ETH0" apart.
func lowerHost(host string) string {
	if i := strings.IndexByte(host, '%'); i >= 0 {
		return strings.ToLower(host[:i]) + host[i:]
	}
	return strings.ToLower(host)
}

// canonicalHost returns host, an ASCII host as lowerHost returns it,
// without brackets, with one trailing dot dropped and an IP address in
// canonical form.
func canonicalHost(host string) string {
	if len(host) > 1 && strings.HasSuffix(host, ".") {
		host = host[:len(host)-1]
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().String()
	}
	if ip, ok := ipv4Numbers(host); ok {
		return ip.String()
	}
	return host
}

// ipv4Numbers reads host as the C library's inet_aton does, as a URL
// parser does (WHATWG) and as a resolver may. That is one to four
// numbers, each decimal, octal (a leading 0) or hexadecimal (0x), the last
// filling the bytes left. So "127.1", "0x7f.0.0.1" and "2130706433" are
// 127.0.0.1.
func ipv4Numbers(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 1 && p[:2] == "0x":
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil && !(base == 16 && p == "") { // "0x" alone is 0
			return netip.Addr{}, false
		}
		last := i == len(parts)-1
		if !last && n > 255 || last && n >= 1<<(8*(5-len(parts))) {
			return netip.Addr{}, false
		}
		if last {
			v = v<<(8*(5-len(parts))) | n
		} else {
			v = v<<8 | n
		}
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
