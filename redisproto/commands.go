package redisproto

import (
	"sort"
	"strings"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
)

// allSpecs lists every command this server knows: keyspace and local, by name.
func allSpecs() []*localSpec {
	var out []*localSpec
	for _, s := range command.Specs() {
		out = append(out, &localSpec{Spec: *s})
	}
	for _, s := range locals {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func findSpec(name []byte) *localSpec {
	if s, ok := command.Lookup(name); ok {
		return &localSpec{Spec: *s}
	}
	return locals[strings.ToLower(string(name))]
}

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
			out = append(out, resp.NilArray)
		}
	}
	return resp.Array(out...)
}

// commandInfo is one command's COMMAND INFO entry, in Redis 7's ten-field shape.
func commandInfo(s *localSpec) resp.Value {
	flags := make([]resp.Value, len(s.Flags))
	for i, f := range s.Flags {
		flags[i] = resp.Simple(f)
	}
	cats := make([]resp.Value, len(s.Categories))
	for i, c := range s.Categories {
		cats[i] = resp.Simple(c)
	}
	var subs []resp.Value
	names := make([]string, 0, len(s.sub))
	for n := range s.sub {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		subs = append(subs, commandInfo(s.sub[n]))
	}
	return resp.Array(
		resp.BulkString(s.Name), resp.Int(int64(s.Arity)),
		resp.Value{Kind: resp.KindSet, Elems: flags},
		resp.Int(int64(s.FirstKey)), resp.Int(int64(s.LastKey)), resp.Int(int64(s.Step)),
		resp.Value{Kind: resp.KindSet, Elems: cats},
		resp.Array(), resp.Array(), resp.Array(subs...),
	)
}

// COMMAND DOCS [command-name ...]
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
		group := "generic"
		for _, c := range s.Categories {
			switch c {
			case "@string":
				group = "string"
			case "@connection":
				group = "connection"
			}
		}
		out = append(out, resp.BulkString(s.Name), resp.Map(
			resp.BulkString("summary"), resp.BulkString(summaries[s.Name]),
			resp.BulkString("since"), resp.BulkString("1.0.0"),
			resp.BulkString("group"), resp.BulkString(group),
		))
	}
	return resp.Map(out...)
}

// summaries of the extension commands; Redis's own commands are documented by Redis.
var summaries = map[string]string{
	"fence": "Return the fencing token of a key's current value (lockd extension)",
}
