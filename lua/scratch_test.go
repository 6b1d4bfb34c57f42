package lua

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/lockd/lockd/resp"
)

// TestScratch runs the scripts of $SCRATCH_FILE (JSON lines {"s","p","keys","args"}) and prints replies.
func TestScratch(t *testing.T) {
	path := os.Getenv("SCRATCH_FILE")
	if path == "" {
		t.Skip()
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c struct {
			S    string   `json:"s"`
			P    int      `json:"p"`
			Keys []string `json:"keys"`
			Args []string `json:"args"`
			Pre  [][]string `json:"pre"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.P == 0 {
			c.P = 2
		}
		e := New()
		h := newFakeHost()
		for _, p := range c.Pre {
			var a [][]byte
			for _, x := range p {
				a = append(a, []byte(x))
			}
			h.Call(a)
		}
		var out []byte
		sha, err := e.Load([]byte(c.S))
		if err != nil {
			out = resp.Append(nil, resp.Error(err.Error()), c.P)
		} else {
			var keys, args [][]byte
			for _, k := range c.Keys {
				keys = append(keys, []byte(k))
			}
			for _, a := range c.Args {
				args = append(args, []byte(a))
			}
			out = resp.Append(nil, e.Run(sha, keys, args, h, Limits{}), c.P)
		}
		rs := make([]rune, len(out))
		for i, c := range out {
			rs[i] = rune(c)
		}
		b, _ := json.Marshal(map[string]any{"s": c.S, "p": c.P, "r": string(rs)})
		fmt.Println(string(b))
	}
}
