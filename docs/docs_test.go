// Package docs holds lockd's documentation; its test checks the pages' links.
// The other documentation checks live beside what they check:
// redisproto's TestCommandsDocumented (every command in commands.md) and
// cmd/lockd's TestConfigurationReference (every flag in configuration.md).
package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, relative to this package.
const root = ".."

// readmeMaxLines is the README's budget: a newcomer's guide, the rest in docs/.
const readmeMaxLines = 300

// pages lists the Markdown files whose links are checked: README.md,
// SECURITY.md, everything under docs/ and every package's DESIGN.md.
func pages(t *testing.T) []string {
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "node_modules" || name == "lockd-data") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case rel == "README.md", rel == "SECURITY.md", name == "DESIGN.md",
			strings.HasPrefix(rel, "docs"+string(filepath.Separator)) && strings.HasSuffix(name, ".md"):
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 3 {
		t.Fatalf("found only %v: is the repository layout what this test expects?", out)
	}
	return out
}

var (
	linkRE   = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE   = regexp.MustCompile("`[^`]*`")
	headerRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// page is what the link check needs of one Markdown file: its links (outside
// code) and the anchors its headings make.
type page struct {
	links   []link
	anchors map[string]bool
}

type link struct {
	line   int
	target string
}

func parse(t *testing.T, path string) page {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := headerRE.FindStringSubmatch(line); m != nil {
			a := slug(m[2])
			if k := seen[a]; k > 0 {
				p.anchors[a+"-"+itoa(k)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			p.links = append(p.links, link{n, m[1]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return p
}

// slug is the anchor GitHub makes of a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces as '-'.
func slug(heading string) string {
	heading = strings.NewReplacer("`", "", "*", "").Replace(heading)
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestLinksResolve checks every relative link of README.md, SECURITY.md,
// docs/ and the DESIGN.md files: the file (or directory) it names exists, and
// an anchor names a heading of that page.
func TestLinksResolve(t *testing.T) {
	cache := map[string]page{}
	get := func(path string) page {
		if p, ok := cache[path]; ok {
			return p
		}
		p := parse(t, path)
		cache[path] = p
		return p
	}
	checked := 0
	for _, path := range pages(t) {
		for _, l := range get(path).links {
			target := l.target
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			}
			rel, _ := filepath.Rel(root, path)
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s:%d: link %q: no such file", rel, l.line, target)
				continue
			}
			checked++
			if anchor == "" {
				continue
			}
			if info.IsDir() || !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into something that is not a Markdown page", rel, l.line, target)
				continue
			}
			if !get(dest).anchors[anchor] {
				t.Errorf("%s:%d: link %q: no heading makes the anchor #%s", rel, l.line, target, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link checked: the parser found none")
	}
}

// TestReadmeShort keeps README.md a newcomer's guide.
func TestReadmeShort(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > readmeMaxLines {
		t.Fatalf("README.md has %d lines, at most %d: move details into docs/", n, readmeMaxLines)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Upgrading, one node at a time": "upgrading-one-node-at-a-time",
		"`SET … FENCE` and `FENCE`":     "set--fence-and-fence",
		"Where to read next":            "where-to-read-next",
		"Lock-delay":                    "lock-delay",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
