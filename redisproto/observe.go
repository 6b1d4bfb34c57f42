package redisproto

import (
	"bytes"
	"time"

	"github.com/lockd/lockd/resp"
)

// CommandObserver is told about every command the RESP door answered: its
// name (lower case, "container|sub" for subcommands' containers as sent),
// its result class and how long it took. Called from connection goroutines;
// it must be cheap and safe for concurrent use.
type CommandObserver func(command, result string, d time.Duration)

// resultCodes are the error codes a result may be reported with; any other
// error is "other", so that a script's own error codes cannot grow the label
// set without bound.
var resultCodes = map[string]bool{
	"ERR": true, "WRONGTYPE": true, "NOSCRIPT": true, "BUSY": true, "TRYAGAIN": true, "UNKNOWNOUTCOME": true,
	"QUEUEFULL": true, "RATELIMITED": true, "NOSESSION": true, "NOAUTH": true, "NOPERM": true, "WRONGPASS": true,
	"EXECABORT": true, "CROSSSLOT": true, "MOVED": true, "LOADING": true, "OOM": true,
}

// resultOf classifies a reply: "ok" for any non-error reply, else the error's
// code.
func resultOf(v resp.Value) string {
	if !v.IsError() {
		return "ok"
	}
	code := v.Str
	if i := bytes.IndexByte(code, ' '); i >= 0 {
		code = code[:i]
	}
	if resultCodes[string(code)] {
		return string(code)
	}
	return "other"
}

// observe reports one answered command to the configured observer, if any,
// and to the slow log.
func (c *conn) observe(name string, args [][]byte, v resp.Value, d time.Duration) {
	if c.srv.cfg.ObserveCommand != nil {
		c.srv.cfg.ObserveCommand(name, resultOf(v), d)
	}
	c.srv.slowlog.note(c, name, args, d)
}

// localName is the metric name of a command the door answers itself: its name
// when known ("unknown" otherwise, so clients cannot grow the label set), with
// the subcommand of a container ("client|setname").
func localName(args [][]byte) string {
	name := string(bytes.ToLower(args[0]))
	s, ok := locals[name]
	if !ok {
		return "unknown"
	}
	if s.sub != nil && len(args) > 1 {
		if _, ok := s.sub[string(bytes.ToLower(args[1]))]; ok {
			return name + "|" + string(bytes.ToLower(args[1]))
		}
	}
	return name
}
