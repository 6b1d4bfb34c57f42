package redisproto

import (
	"bufio"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// commandsDoc is the command reference, relative to this package.
const commandsDoc = "../docs/commands.md"

// docWordRE is a command word as docs/commands.md writes it at the start of a
// row: letters, digits, '.', '_' and '-' ("LOCK.ACQUIRE", "EVAL_RO",
// "NO-EVICT").
var docWordRE = regexp.MustCompile(`^[A-Za-z0-9._-]+`)

// documentedCommands reads the command names docs/commands.md documents: for
// every table row whose first cell starts with a code span, the span's first
// word and, when that word names a container (CLIENT, CONFIG, RAFT, …), its
// second word if that is upper case — "client|kill" for
// "| `CLIENT KILL …` |", "command" for "| `COMMAND` |". Names come back in
// the server's form (lower case). Rows whose first word is not upper case are
// returned in bad.
func documentedCommands(t *testing.T) (names map[string]bool, bad []string) {
	f, err := os.Open(commandsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names = map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cell := strings.TrimSpace(line[1:])
		if !strings.HasPrefix(cell, "`") {
			continue // a header, a separator, or a row that is not a command
		}
		span, _, ok := strings.Cut(cell[1:], "`")
		if !ok {
			continue
		}
		fields := strings.Fields(span)
		if len(fields) == 0 {
			continue
		}
		first := docWordRE.FindString(fields[0])
		if first == "" || first != strings.ToUpper(first) {
			bad = append(bad, "line "+strconv.Itoa(n)+": "+span)
			continue
		}
		name := strings.ToLower(first)
		if s := findSpec([]byte(name)); s != nil && s.sub != nil && len(fields) > 1 {
			if second := docWordRE.FindString(fields[1]); second != "" && second == strings.ToUpper(second) &&
				strings.ContainsAny(second, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
				name += "|" + strings.ToLower(second)
			}
		}
		names[name] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names, bad
}

// TestCommandsDocumented keeps docs/commands.md complete: every command the
// server knows has a row there — each top-level command without
// subcommands, each subcommand of a container ("client|kill"), and a
// container that also runs on its own (COMMAND) — and every row names a
// command the server knows, so that a removed command leaves the page too.
// The server's table is allSpecs and subSpecs: what COMMAND reports.
func TestCommandsDocumented(t *testing.T) {
	documented, bad := documentedCommands(t)
	if len(bad) > 0 {
		t.Errorf("docs/commands.md has rows whose command is not upper case: %s", strings.Join(bad, "; "))
	}
	known := map[string]bool{}
	var missing []string
	need := func(name string) {
		if !documented[name] {
			missing = append(missing, name)
		}
	}
	for _, s := range allSpecs() {
		known[s.Name] = true
		subs := subSpecs(s)
		if subs == nil || s.run != nil {
			need(s.Name)
		}
		for _, sub := range subs {
			known[sub.Name] = true
			need(sub.Name)
		}
	}
	var unknown []string
	for name := range documented {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(unknown)
	if len(missing) > 0 {
		t.Errorf("docs/commands.md does not document: %s", strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		t.Errorf("docs/commands.md documents unknown commands: %s", strings.Join(unknown, ", "))
	}
	if len(known) < 100 || len(documented) == 0 {
		t.Fatalf("the server knows %d commands and the page documents %d: is the table or the page's format what this test expects?", len(known), len(documented))
	}
}
