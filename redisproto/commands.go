package redisproto

import (
	"sort"
	"strings"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// keyspaceContainers are the keyspace commands with subcommands (OBJECT,
// MEMORY: a container row whose parser reads the subcommand, each subcommand
// a keyspace row of its own), by name, each with its subcommands' rows in
// sub, as doorTable builds the front door's containers. COMMAND describes
// them as it describes CLIENT. They have no run: the state machine answers
// them.
var keyspaceContainers = keyspaceTable()

func keyspaceTable() map[string]*localSpec {
	out := map[string]*localSpec{}
	for _, s := range command.Specs() {
		subs := command.Subcommands(s.Name)
		if len(subs) == 0 {
			continue
		}
		l := &localSpec{Spec: s, sub: make(map[string]*localSpec, len(subs))}
		for _, sub := range subs {
			_, name, _ := strings.Cut(sub.Name, "|")
			l.sub[name] = &localSpec{Spec: sub}
		}
		out[s.Name] = l
	}
	return out
}

// allSpecs lists every command this server knows, keyspace and local, by
// name: the command table's rows without the subcommands, which hang off
// their container's sub.
func allSpecs() []*localSpec {
	var out []*localSpec
	for _, s := range command.Commands() {
		if l, ok := locals[s.Name]; ok {
			out = append(out, l)
		} else if l, ok := keyspaceContainers[s.Name]; ok {
			out = append(out, l)
		} else {
			out = append(out, &localSpec{Spec: s})
		}
	}
	return out
}

// findSpec finds a command by name, in any case; "container|sub" names a
// subcommand, as in Redis's COMMAND INFO and COMMAND DOCS, of a front-door
// container (CLIENT) or a keyspace one (OBJECT).
func findSpec(name []byte) *localSpec {
	n := strings.ToLower(string(name))
	parent, sub, isSub := strings.Cut(n, "|")
	s := locals[parent]
	if s == nil {
		s = keyspaceContainers[parent]
	}
	if s == nil {
		spec, ok := command.Lookup([]byte(parent))
		if !ok {
			return nil
		}
		s = &localSpec{Spec: spec}
	}
	if !isSub {
		return s
	}
	return s.sub[sub] // nil for an unknown subcommand, or for one of a leaf command
}

// subSpecs returns a container's subcommands, by name; nil for a leaf command.
// (Redis lists them in its hash table's order, which changes from one process
// to the next; lockd's order is fixed.)
func subSpecs(s *localSpec) []*localSpec {
	if s.sub == nil {
		return nil
	}
	out := make([]*localSpec, 0, len(s.sub))
	for _, sub := range s.sub {
		out = append(out, sub)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// metaOf is what COMMAND reports about s: its row's metadata, which is
// Redis's own description and so wins over the row's arity wherever they
// differ.
func metaOf(s *localSpec) command.CommandMeta { return s.Meta }

// COMMAND — details of every command.
func cmdCommand(_ *conn, a [][]byte) resp.Value {
	var out []resp.Value
	for _, s := range allSpecs() {
		out = append(out, commandInfo(s))
	}
	return resp.Array(out...)
}

// COMMAND INFO [command-name ...]
func cmdCommandInfo(_ *conn, a [][]byte) resp.Value {
	if len(a) == 2 {
		return cmdCommand(nil, a)
	}
	var out []resp.Value
	for _, n := range a[2:] {
		if s := findSpec(n); s != nil {
			out = append(out, commandInfo(s))
		} else {
			out = append(out, resp.Nil)
		}
	}
	return resp.Array(out...)
}

// commandInfo is one command's COMMAND INFO entry, in Redis 7's ten-field shape:
// name, arity, flags, first key, last key, step, ACL categories, tips, key
// specifications, subcommands.
func commandInfo(s *localSpec) resp.Value {
	m := metaOf(s)
	var specs []resp.Value
	for _, ks := range m.KeySpecs {
		specs = append(specs, keySpec(ks))
	}
	// A leaf command's subcommands are an empty set, a container's an array.
	subs := infoSet()
	if s.sub != nil {
		var elems []resp.Value
		for _, sub := range subSpecs(s) {
			elems = append(elems, commandInfo(sub))
		}
		subs = resp.Array(elems...)
	}
	return resp.Array(
		resp.BulkString(s.Name), resp.Int(int64(m.Arity)),
		infoSet(infoSimples(m.Flags)...),
		resp.Int(int64(m.FirstKey)), resp.Int(int64(m.LastKey)), resp.Int(int64(m.Step)),
		infoSet(infoSimples(m.Categories)...),
		infoSet(infoBulks(m.Tips)...),
		infoSet(specs...),
		subs,
	)
}

// keySpec renders one key specification as Redis does: a map of notes (when
// there are some), flags, begin_search and find_keys.
func keySpec(ks command.KeySpec) resp.Value {
	var kv []resp.Value
	if ks.Notes != "" {
		kv = append(kv, resp.BulkString("notes"), resp.BulkString(ks.Notes))
	}
	kv = append(kv, resp.BulkString("flags"), infoSet(infoSimples(ks.Flags)...))

	var bs []resp.Value
	switch ks.Begin.Type {
	case "index":
		bs = infoPairs("index", resp.Int(int64(ks.Begin.Index)))
	case "keyword":
		bs = infoPairs("keyword", resp.BulkString(ks.Begin.Keyword), "startfrom", resp.Int(int64(ks.Begin.StartFrom)))
	}
	kv = append(kv, resp.BulkString("begin_search"), resp.Map(infoPairs("type", resp.BulkString(beginType(ks.Begin.Type)), "spec", resp.Map(bs...))...))

	var fk []resp.Value
	switch ks.Find.Type {
	case "range":
		fk = infoPairs("lastkey", resp.Int(int64(ks.Find.LastKey)), "keystep", resp.Int(int64(ks.Find.KeyStep)),
			"limit", resp.Int(int64(ks.Find.Limit)))
	case "keynum":
		fk = infoPairs("keynumidx", resp.Int(int64(ks.Find.KeyNumIdx)), "firstkey", resp.Int(int64(ks.Find.FirstKey)),
			"keystep", resp.Int(int64(ks.Find.KeyStep)))
	}
	kv = append(kv, resp.BulkString("find_keys"), resp.Map(infoPairs("type", resp.BulkString(findType(ks.Find.Type)), "spec", resp.Map(fk...))...))
	return resp.Map(kv...)
}

func beginType(t string) string {
	if t == "index" || t == "keyword" {
		return t
	}
	return "unknown"
}

func findType(t string) string {
	if t == "range" || t == "keynum" {
		return t
	}
	return "unknown"
}

// COMMAND DOCS [command-name ...] — unknown names are left out, as in Redis.
func cmdCommandDocs(_ *conn, a [][]byte) resp.Value {
	var specs []*localSpec
	if len(a) == 2 {
		specs = allSpecs()
	} else {
		for _, n := range a[2:] {
			if s := findSpec(n); s != nil {
				specs = append(specs, s)
			}
		}
	}
	var out []resp.Value
	for _, s := range specs {
		out = append(out, resp.BulkString(s.Name), commandDocs(s))
	}
	return resp.Map(out...)
}

// commandDocs is one command's COMMAND DOCS map, in Redis's field order. The
// arguments and history trees are not reported.
func commandDocs(s *localSpec) resp.Value {
	d := metaOf(s).Doc
	var kv []resp.Value
	if d.Summary != "" {
		kv = append(kv, infoPairs("summary", resp.BulkString(d.Summary))...)
	}
	if d.Since != "" {
		kv = append(kv, infoPairs("since", resp.BulkString(d.Since))...)
	}
	kv = append(kv, infoPairs("group", resp.BulkString(d.Group))...)
	if d.Complexity != "" {
		kv = append(kv, infoPairs("complexity", resp.BulkString(d.Complexity))...)
	}
	if len(d.DocFlags) > 0 {
		kv = append(kv, infoPairs("doc_flags", infoSet(infoSimples(d.DocFlags)...))...)
	}
	if d.DeprecatedSince != "" {
		kv = append(kv, infoPairs("deprecated_since", resp.BulkString(d.DeprecatedSince))...)
	}
	if d.ReplacedBy != "" {
		kv = append(kv, infoPairs("replaced_by", resp.BulkString(d.ReplacedBy))...)
	}
	if s.sub != nil {
		var subs []resp.Value
		for _, sub := range subSpecs(s) {
			subs = append(subs, resp.BulkString(sub.Name), commandDocs(sub))
		}
		kv = append(kv, infoPairs("subcommands", resp.Map(subs...))...)
	}
	return resp.Map(kv...)
}

// infoSet is a RESP3 set (an array in RESP2).
func infoSet(elems ...resp.Value) resp.Value { return resp.Value{Kind: resp.KindSet, Elems: elems} }

func infoSimples(ss []string) []resp.Value {
	out := make([]resp.Value, len(ss))
	for i, s := range ss {
		out[i] = resp.Simple(s)
	}
	return out
}

func infoBulks(ss []string) []resp.Value {
	out := make([]resp.Value, len(ss))
	for i, s := range ss {
		out[i] = resp.BulkString(s)
	}
	return out
}

// infoPairs turns name, value, name, value… into map elements, the names as bulk
// strings.
func infoPairs(kv ...any) []resp.Value {
	out := make([]resp.Value, len(kv))
	for i, x := range kv {
		switch x := x.(type) {
		case string:
			out[i] = resp.BulkString(x)
		case resp.Value:
			out[i] = x
		}
	}
	return out
}
