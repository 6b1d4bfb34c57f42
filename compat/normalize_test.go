package compat

import (
	"bytes"
	"strconv"
	"strings"
)

// The one place where replies that legitimately differ between redis-server
// and lockd are named. Every step not marked with one of these is compared
// byte for byte. Keep this list short: each entry is a place where lockd is
// allowed to differ from Redis.
//
//   - helloIdentity: HELLO's id, version and modules fields.
//   - clientID:      CLIENT ID, any integer.
//   - clientFields:  CLIENT INFO / LIST, the per-connection and memory fields.
//   - infoText:      INFO, only the reply type and a redis_version line.
//   - serverTime:    TIME, two integers within two seconds of each other.
//   - unordered:     KEYS and similar, compared as sorted multisets. (SCAN
//     iterations are compared as sorted sets by the scan step.)
//   - ttlSeconds, ttlMillis, unixSeconds, unixMillis: TTL/PTTL/EXPIRETIME/
//     PEXPIRETIME, within a timing tolerance (negative replies exact).
var (
	helloIdentity = normalizer{"helloIdentity", anyFields("id", "version", "modules")}
	clientID      = normalizer{"clientID", anyInteger}
	clientFields  = normalizer{"clientFields", maskClientFields}
	infoText      = normalizer{"infoText", both(infoShape)}
	serverTime    = normalizer{"serverTime", timeWithin(2)}
	unordered     = normalizer{"unordered", both(sorted)}
	ttlSeconds    = normalizer{"ttlSeconds", within(1)}   // TTL: exact or one second less
	ttlMillis     = normalizer{"ttlMillis", within(250)}  // PTTL (a loaded machine delays one side)
	unixSeconds   = normalizer{"unixSeconds", within(1)}  // EXPIRETIME
	unixMillis    = normalizer{"unixMillis", within(250)} // PEXPIRETIME
)

// clientVolatile are the CLIENT INFO / LIST fields that depend on the
// connection (id, addresses, fd, times) or on the server's memory layout.
var clientVolatile = map[string]bool{
	"id": true, "addr": true, "laddr": true, "fd": true, "age": true, "idle": true,
	"qbuf": true, "qbuf-free": true, "argv-mem": true, "multi-mem": true,
	"rbs": true, "rbp": true, "obl": true, "oll": true, "omem": true, "tot-mem": true,
}

// normalizer maps the two replies of a step to the forms that are compared.
// It receives complete frames only.
type normalizer struct {
	name string
	fn   func(redis, other []byte) ([]byte, []byte)
}

// both applies the same one-sided normalisation to each reply.
func both(f func([]byte) []byte) func(r, o []byte) ([]byte, []byte) {
	return func(r, o []byte) ([]byte, []byte) { return f(r), f(o) }
}

// anyFields replaces the values of the named fields of a map reply (RESP3 map
// or RESP2 flat array of pairs) by a placeholder.
func anyFields(names ...string) func(r, o []byte) ([]byte, []byte) {
	mask := func(raw []byte) []byte {
		v, err := parseValue(raw)
		if err != nil || !v.isAggregate() || len(v.elems)%2 != 0 {
			return raw
		}
		v.elems = append([]value(nil), v.elems...)
		for i := 0; i+1 < len(v.elems); i += 2 {
			for _, n := range names {
				if v.elems[i].isBlob() && v.elems[i].str == n {
					v.elems[i+1] = value{kind: '+', str: "<any>"}
				}
			}
		}
		return v.encode()
	}
	return both(mask)
}

func anyInteger(r, o []byte) ([]byte, []byte) {
	mask := func(b []byte) []byte {
		if v, err := parseValue(b); err == nil && v.kind == ':' {
			return []byte(":<any>\r\n")
		}
		return b
	}
	return mask(r), mask(o)
}

// maskClientFields rewrites every line "k=v k=v …" of a CLIENT INFO / LIST
// reply, replacing the volatile values.
func maskClientFields(r, o []byte) ([]byte, []byte) {
	mask := func(raw []byte) []byte {
		v, err := parseValue(raw)
		if err != nil || !v.isBlob() {
			return raw
		}
		prefix, body := "", v.str
		if v.kind == '=' && len(body) >= 4 {
			prefix, body = body[:4], body[4:] // "txt:"
		}
		lines := strings.Split(body, "\n")
		for i, line := range lines {
			fields := strings.Split(line, " ")
			for j, f := range fields {
				if k, _, ok := strings.Cut(f, "="); ok && clientVolatile[k] {
					fields[j] = k + "=<any>"
				}
			}
			lines[i] = strings.Join(fields, " ")
		}
		v.str = prefix + strings.Join(lines, "\n")
		return v.encode()
	}
	return mask(r), mask(o)
}

// infoShape keeps only what tools rely on: the reply type (bulk in RESP2,
// verbatim in RESP3) and whether a redis_version line is present.
func infoShape(raw []byte) []byte {
	v, err := parseValue(raw)
	if err != nil || !v.isBlob() {
		return raw
	}
	return []byte(string(v.kind) + "<INFO text; redis_version line: " +
		strconv.FormatBool(strings.Contains(v.str, "\nredis_version:") || strings.HasPrefix(v.str, "redis_version:")) + ">\r\n")
}

// timeWithin accepts two TIME replies whose seconds differ by at most secs.
func timeWithin(secs int64) func(r, o []byte) ([]byte, []byte) {
	return func(r, o []byte) ([]byte, []byte) {
		rs, ok1 := timeSeconds(r)
		os, ok2 := timeSeconds(o)
		if ok1 && ok2 && abs(rs-os) <= secs {
			return []byte("<TIME>"), []byte("<TIME>")
		}
		return r, o
	}
}

func timeSeconds(raw []byte) (int64, bool) {
	v, err := parseValue(raw)
	if err != nil || v.kind != '*' || len(v.elems) != 2 {
		return 0, false
	}
	s, err1 := strconv.ParseInt(v.elems[0].str, 10, 64)
	us, err2 := strconv.ParseInt(v.elems[1].str, 10, 64)
	if err1 != nil || err2 != nil || v.elems[0].kind != '$' || v.elems[1].kind != '$' || us < 0 || us > 999999 {
		return 0, false
	}
	return s, true
}

// sorted orders the members of an array or set reply.
func sorted(raw []byte) []byte {
	v, err := parseValue(raw)
	if err != nil || !v.isAggregate() || v.kind == '%' {
		return raw
	}
	return v.sortElems().encode()
}

// within accepts two non-negative integer replies that differ by at most tol,
// for TTL-type replies read a moment apart. Negative replies (-1 no TTL,
// -2 no key) must match exactly.
func within(tol int64) func(r, o []byte) ([]byte, []byte) {
	return func(r, o []byte) ([]byte, []byte) {
		rv, ok1 := integer(r)
		ov, ok2 := integer(o)
		if ok1 && ok2 && rv >= 0 && ov >= 0 && abs(rv-ov) <= tol {
			return r, r
		}
		return r, o
	}
}

func integer(raw []byte) (int64, bool) {
	if len(raw) < 4 || raw[0] != ':' || !bytes.HasSuffix(raw, []byte("\r\n")) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw[1:len(raw)-2]), 10, 64)
	return n, err == nil
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
