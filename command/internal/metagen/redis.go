package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// command is one Redis command (or subcommand) as COMMAND INFO and COMMAND
// DOCS report it: the description of its JSON file with everything Redis
// derives at start-up (implicit ACL categories, the legacy key range, the
// movablekeys flag, display names and orders) already applied.
type command struct {
	name       string // lower case; "container|sub" for a subcommand
	file       string // the JSON file it came from, for error messages
	arity      int
	flags      []string
	firstKey   int
	lastKey    int
	step       int
	categories []string
	tips       []string
	keySpecs   []keySpec
	summary    string
	since      string
	group      string
	complexity string
	docFlags   []string
	deprecated string // deprecated_since
	replacedBy string
}

// keySpec is one key specification, resolved as Redis resolves it.
type keySpec struct {
	notes string
	flags []string

	begin     string // "index", "keyword" or "unknown"
	index     int
	keyword   string
	startFrom int

	find      string // "range", "keynum" or "unknown"
	lastKey   int
	keyStep   int
	limit     int
	keyNumIdx int
	firstKey  int
}

// jsonCommand is the part of a src/commands/*.json description that COMMAND
// INFO and COMMAND DOCS (without arguments and history) report. Other fields
// (arguments, history, function, get_keys_function, reply schemas) are read
// past.
type jsonCommand struct {
	Summary         string        `json:"summary"`
	Complexity      string        `json:"complexity"`
	Group           string        `json:"group"`
	Since           string        `json:"since"`
	Arity           *int          `json:"arity"`
	Container       string        `json:"container"`
	CommandFlags    []string      `json:"command_flags"`
	ACLCategories   []string      `json:"acl_categories"`
	CommandTips     []string      `json:"command_tips"`
	DocFlags        []string      `json:"doc_flags"`
	DeprecatedSince string        `json:"deprecated_since"`
	ReplacedBy      string        `json:"replaced_by"`
	KeySpecs        []jsonKeySpec `json:"key_specs"`
}

type jsonKeySpec struct {
	Notes       string                     `json:"notes"`
	Flags       []string                   `json:"flags"`
	BeginSearch map[string]json.RawMessage `json:"begin_search"`
	FindKeys    map[string]json.RawMessage `json:"find_keys"`
}

// The orders and display names below are Redis 7.0's: the flag tables of
// COMMAND INFO (server.c: addReplyFlagsForCommand, addReplyFlagsForKeyArgs,
// addReplyDocFlagsForCommand) and the ACL category table (acl.c). A name
// that is in none of them fails the generation, so that a file from another
// Redis version cannot slip through half understood.

// commandFlags lists the command flags COMMAND INFO reports, in its order;
// "MOVABLE_KEYS" is never in a file: it is derived from the key specs.
var commandFlags = []string{
	"WRITE", "READONLY", "DENYOOM", "MODULE", "ADMIN", "PUBSUB", "NOSCRIPT",
	"BLOCKING", "LOADING", "STALE", "SKIP_MONITOR", "SKIP_SLOWLOG", "ASKING",
	"FAST", "NO_AUTH", "NO_MANDATORY_KEYS", "NO_ASYNC_LOADING", "NO_MULTI",
	"MOVABLE_KEYS", "ALLOW_BUSY",
}

// hiddenFlags are command flags Redis knows but COMMAND INFO does not report.
var hiddenFlags = map[string]bool{
	"MAY_REPLICATE": true, "SENTINEL": true, "PROTECTED": true, "TOUCHES_ARBITRARY_KEYS": true,
}

// keySpecFlags lists the key spec flags, in COMMAND INFO's order; the first
// four are reported in upper case, the others in lower case.
var keySpecFlags = []string{
	"RO", "RW", "OW", "RM", "ACCESS", "UPDATE", "INSERT", "DELETE", "NOT_KEY",
	"INCOMPLETE", "VARIABLE_FLAGS",
}

var docFlags = []string{"DEPRECATED", "SYSCMD"}

// aclCategories lists the ACL categories in the order COMMAND INFO reports them.
var aclCategories = []string{
	"KEYSPACE", "READ", "WRITE", "SET", "SORTEDSET", "LIST", "HASH", "STRING",
	"BITMAP", "HYPERLOGLOG", "GEO", "STREAM", "PUBSUB", "ADMIN", "FAST", "SLOW",
	"BLOCKING", "DANGEROUS", "CONNECTION", "TRANSACTION", "SCRIPTING",
}

// groups maps a file's group to the name COMMAND DOCS reports.
var groups = map[string]string{
	"generic": "generic", "string": "string", "list": "list", "set": "set",
	"sorted_set": "sorted-set", "hash": "hash", "pubsub": "pubsub",
	"transactions": "transactions", "connection": "connection", "server": "server",
	"scripting": "scripting", "hyperloglog": "hyperloglog", "cluster": "cluster",
	"sentinel": "sentinel", "geo": "geo", "stream": "stream", "bitmap": "bitmap",
}

// loadDir reads every *.json file of dir and returns the commands they
// describe, sorted by name. A subcommand's container must be described too.
func loadDir(dir string) ([]command, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.json files in %s", dir)
	}
	var cmds []command
	containers := map[string]jsonCommand{}
	raw := map[string]jsonCommand{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var desc map[string]jsonCommand
		if err := json.Unmarshal(b, &desc); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		for name, d := range desc {
			full := strings.ToLower(name)
			if d.Container != "" {
				full = strings.ToLower(d.Container) + "|" + full
			} else {
				containers[full] = d
			}
			if _, dup := raw[full]; dup {
				return nil, fmt.Errorf("%s: %s is described twice", f, full)
			}
			raw[full] = d
			c, err := resolve(full, d)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %v", filepath.Base(f), full, err)
			}
			c.file = filepath.Base(f)
			cmds = append(cmds, c)
		}
	}
	// A subcommand is in its container's group (Redis's generator links
	// them so); it may not name another.
	for i, c := range cmds {
		d := raw[c.name]
		if d.Container == "" {
			continue
		}
		parent, ok := containers[strings.ToLower(d.Container)]
		if !ok {
			return nil, fmt.Errorf("%s: %s: its container %s has no file", c.file, c.name, strings.ToLower(d.Container))
		}
		if d.Group != "" && d.Group != parent.Group {
			return nil, fmt.Errorf("%s: %s: group %q, but its container's is %q", c.file, c.name, d.Group, parent.Group)
		}
		cmds[i].group = groups[parent.Group]
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	return cmds, nil
}

// resolve turns one JSON description into what Redis 7.0 reports for it.
func resolve(name string, d jsonCommand) (command, error) {
	c := command{
		name: name, summary: d.Summary, since: d.Since, complexity: d.Complexity,
		deprecated: d.DeprecatedSince, replacedBy: d.ReplacedBy,
	}
	if d.Arity == nil {
		return c, fmt.Errorf("no arity")
	}
	c.arity = *d.Arity
	g, ok := groups[d.Group]
	if !ok && (d.Group != "" || d.Container == "") {
		return c, fmt.Errorf("unknown group %q", d.Group)
	}
	c.group = g

	flags := map[string]bool{}
	for _, f := range d.CommandFlags {
		switch {
		case f == "ONLY_SENTINEL":
			return c, fmt.Errorf("a Sentinel-only command is not in redis-server")
		case hiddenFlags[f]:
		case f != "MOVABLE_KEYS" && contains(commandFlags, f):
			flags[f] = true
		default:
			return c, fmt.Errorf("unknown command flag %q", f)
		}
	}

	for _, js := range d.KeySpecs {
		ks, err := resolveKeySpec(js)
		if err != nil {
			return c, err
		}
		c.keySpecs = append(c.keySpecs, ks)
	}
	var movable bool
	c.firstKey, c.lastKey, c.step, movable = legacyRange(c.keySpecs)
	if movable {
		flags["MOVABLE_KEYS"] = true
	}
	c.flags = ordered(commandFlags, flags, func(f string) string {
		if f == "MOVABLE_KEYS" {
			return "movablekeys" // CMD_MOVABLE_KEYS's reply name
		}
		return strings.ToLower(f)
	})

	cats := map[string]bool{}
	for _, a := range d.ACLCategories {
		if !contains(aclCategories, a) {
			return c, fmt.Errorf("unknown ACL category %q", a)
		}
		cats[a] = true
	}
	implicitCategories(flags, cats)
	c.categories = ordered(aclCategories, cats, func(s string) string { return "@" + strings.ToLower(s) })

	for _, t := range d.CommandTips {
		c.tips = append(c.tips, strings.ToLower(t))
	}

	df := map[string]bool{}
	for _, f := range d.DocFlags {
		if !contains(docFlags, f) {
			return c, fmt.Errorf("unknown doc flag %q", f)
		}
		df[f] = true
	}
	c.docFlags = ordered(docFlags, df, strings.ToLower)
	return c, nil
}

// implicitCategories adds the ACL categories Redis derives from a command's
// flags (server.c: setImplicitACLCategories).
func implicitCategories(flags, cats map[string]bool) {
	if flags["WRITE"] {
		cats["WRITE"] = true
	}
	if flags["READONLY"] && !cats["SCRIPTING"] { // scripts are not @read
		cats["READ"] = true
	}
	if flags["ADMIN"] {
		cats["ADMIN"], cats["DANGEROUS"] = true, true
	}
	if flags["PUBSUB"] {
		cats["PUBSUB"] = true
	}
	if flags["FAST"] {
		cats["FAST"] = true
	}
	if flags["BLOCKING"] {
		cats["BLOCKING"] = true
	}
	if !cats["FAST"] {
		cats["SLOW"] = true
	}
}

func resolveKeySpec(js jsonKeySpec) (keySpec, error) {
	ks := keySpec{notes: js.Notes}
	set := map[string]bool{}
	for _, f := range js.Flags {
		if !contains(keySpecFlags, f) {
			return ks, fmt.Errorf("unknown key spec flag %q", f)
		}
		set[f] = true
	}
	ks.flags = ordered(keySpecFlags, set, func(s string) string {
		if len(s) == 2 {
			return s // RO, RW, OW, RM
		}
		return strings.ToLower(s)
	})

	switch {
	case present(js.BeginSearch, "index"):
		var v struct {
			Pos int `json:"pos"`
		}
		if err := json.Unmarshal(js.BeginSearch["index"], &v); err != nil {
			return ks, fmt.Errorf("begin_search: %v", err)
		}
		ks.begin, ks.index = "index", v.Pos
	case present(js.BeginSearch, "keyword"):
		var v struct {
			Keyword   string `json:"keyword"`
			StartFrom int    `json:"startfrom"`
		}
		if err := json.Unmarshal(js.BeginSearch["keyword"], &v); err != nil {
			return ks, fmt.Errorf("begin_search: %v", err)
		}
		ks.begin, ks.keyword, ks.startFrom = "keyword", v.Keyword, v.StartFrom
	case hasKey(js.BeginSearch, "unknown"):
		ks.begin = "unknown"
	default:
		return ks, fmt.Errorf("invalid begin_search")
	}

	switch {
	case present(js.FindKeys, "range"):
		var v struct {
			LastKey int `json:"lastkey"`
			Step    int `json:"step"`
			Limit   int `json:"limit"`
		}
		if err := json.Unmarshal(js.FindKeys["range"], &v); err != nil {
			return ks, fmt.Errorf("find_keys: %v", err)
		}
		ks.find, ks.lastKey, ks.keyStep, ks.limit = "range", v.LastKey, v.Step, v.Limit
	case present(js.FindKeys, "keynum"):
		var v struct {
			KeyNumIdx int `json:"keynumidx"`
			FirstKey  int `json:"firstkey"`
			Step      int `json:"step"`
		}
		if err := json.Unmarshal(js.FindKeys["keynum"], &v); err != nil {
			return ks, fmt.Errorf("find_keys: %v", err)
		}
		ks.find, ks.keyNumIdx, ks.firstKey, ks.keyStep = "keynum", v.KeyNumIdx, v.FirstKey, v.Step
	case hasKey(js.FindKeys, "unknown"):
		ks.find = "unknown"
	default:
		return ks, fmt.Errorf("invalid find_keys")
	}
	return ks, nil
}

// legacyRange is the (first key, last key, step) triple COMMAND INFO reports
// for a command with these key specs, and whether Redis marks the command
// "movablekeys" because that triple does not cover every key (server.c:
// populateCommandLegacyRangeSpec and addReplyCommandInfo). Last is absolute,
// or negative (counted from the end of the arguments).
func legacyRange(specs []keySpec) (first, last, step int, movable bool) {
	if len(specs) == 0 {
		return 0, 0, 0, false
	}
	if len(specs) == 1 && specs[0].begin == "index" && specs[0].find == "range" {
		s := specs[0]
		last = s.lastKey
		if last >= 0 {
			last += s.index
		}
		return s.index, last, s.keyStep, contains(s.flags, "incomplete")
	}
	const none = int(^uint(0) >> 1)
	first = none
	var lastAbs, prevLast int32
	for _, s := range specs {
		if s.begin != "index" || s.find != "range" {
			movable = true
			continue
		}
		if s.keyStep != 1 || (prevLast != 0 && int(prevLast) != s.index-1) {
			movable = true
			continue
		}
		if contains(s.flags, "incomplete") {
			movable = true
		}
		first = min(first, s.index)
		abs := int32(s.lastKey)
		if abs >= 0 {
			abs += int32(s.index)
		}
		// Redis compares as unsigned, so that a negative (from the end)
		// last key wins over any absolute one.
		lastAbs = int32(max(uint32(lastAbs), uint32(abs)))
		prevLast = lastAbs
	}
	if first == none {
		return 0, 0, 0, true
	}
	return first, int(lastAbs), 1, movable
}

// ordered returns the members of set in the order of all, each through name.
func ordered(all []string, set map[string]bool, name func(string) string) []string {
	var out []string
	for _, s := range all {
		if set[s] {
			out = append(out, name(s))
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// present reports whether m has key with a value that is not null, false or
// empty (Python's truthiness, as Redis's generator tests it).
func present(m map[string]json.RawMessage, key string) bool {
	v, ok := m[key]
	if !ok {
		return false
	}
	switch strings.TrimSpace(string(v)) {
	case "null", "false", "{}", "0", `""`:
		return false
	}
	return true
}

func hasKey(m map[string]json.RawMessage, key string) bool {
	_, ok := m[key]
	return ok
}
