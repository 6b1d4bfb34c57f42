package lua

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/lockd/lockd/resp"
)

func TestScratch(t *testing.T) {
	path := os.Getenv("SCRATCH_FILE")
	if path == "" {
		t.Skip()
	}
	f, _ := os.Open(path)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c struct {
			S    string     `json:"s"`
			P    int        `json:"p"`
			Keys []string   `json:"keys"`
			Args []string   `json:"args"`
			Pre  [][]string `json:"pre"`
		}
		json.Unmarshal(sc.Bytes(), &c)
		if c.P == 0 {
			c.P = 2
		}
		e := New()
		h := newFakeHost()
		for _, p := range c.Pre {
			h.Call(bytesArgs(p))
		}
		var out []byte
		sha, err := e.Load([]byte(c.S))
		if err != nil {
			out = resp.Append(nil, resp.Error(err.Error()), c.P)
		} else {
			out = resp.Append(nil, e.Run(sha, bytesArgs(c.Keys), bytesArgs(c.Args), h, Limits{}), c.P)
		}
		rs := make([]rune, len(out))
		for i, c := range out {
			rs[i] = rune(c)
		}
		b, _ := json.Marshal(map[string]any{"s": c.S, "p": c.P, "r": string(rs)})
		fmt.Println(string(b))
	}
}
