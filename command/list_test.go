package command

import (
	"testing"
)

func TestParseTimeout(t *testing.T) {
	for _, c := range []struct {
		in   string
		ms   int64
		fail Error
	}{
		{"0", 0, ""}, {"1", 1000, ""}, {"0.1", 100, ""}, {"0.0001", 1, ""}, {"1e1", 10000, ""},
		{"-0", 0, ""}, {"-0.0001", 0, ""}, {"-1", 0, errTimeoutNeg}, {"inf", 0, errTimeoutNeg},
		{"1e300", 0, errTimeoutNeg}, {"1e400", 0, errTimeoutNeg}, {"nan", 0, errTimeoutFloat},
		{"abc", 0, errTimeoutFloat}, {"", 0, errTimeoutFloat}, {" 1", 0, errTimeoutFloat},
		{"1 ", 0, errTimeoutFloat}, {"1_0", 0, errTimeoutFloat},
	} {
		ms, err := ParseTimeout([]byte(c.in))
		if c.fail != "" {
			if err != c.fail {
				t.Errorf("ParseTimeout(%q) = %d, %v; want %v", c.in, ms, err, c.fail)
			}
			continue
		}
		if err != nil || ms != c.ms {
			t.Errorf("ParseTimeout(%q) = %d, %v; want %d", c.in, ms, err, c.ms)
		}
	}
}

// A blocking pop queued again elsewhere keeps its arguments but its timeout.
func TestWithTimeout(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"BLPOP a b 10", "BLPOP a b 2.500"},
		{"BLMOVE a b LEFT RIGHT 10", "BLMOVE a b LEFT RIGHT 2.500"},
		{"BLMPOP 10 2 a b LEFT COUNT 3", "BLMPOP 2.500 2 a b LEFT COUNT 3"},
		{"POP.WAIT t BLPOP a 10", ""},
	} {
		args := splitArgs(c.in)
		op, _, err := Parse(args)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		pop := op.(BlockingPop)
		if c.want == "" {
			if string(pop.Tag) != "t" || string(pop.Keys[0]) != "a" || pop.Timeout != 10000 {
				t.Fatalf("%s parsed as %+v", c.in, pop)
			}
			continue
		}
		got := joinArgs(pop.WithTimeout(args, 2500))
		if got != c.want {
			t.Errorf("%s with 2.5 s = %q, want %q", c.in, got, c.want)
		}
		if joinArgs(args) != c.in {
			t.Errorf("WithTimeout changed its input: %q", joinArgs(args))
		}
	}
	if keys := CommandKeys(splitArgs("POP.WAIT t BLMPOP 0 2 a b LEFT")); len(keys) != 2 || string(keys[1]) != "b" {
		t.Errorf("POP.WAIT keys = %q", keys)
	}
	if FullName(splitArgs("POP.WAIT t BRPOP a 0")) != "brpop" {
		t.Errorf("POP.WAIT's ACL name is not its inner command's")
	}
}

func splitArgs(s string) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			out = append(out, []byte(s[start:i]))
			start = i + 1
		}
	}
	return out
}

func joinArgs(a [][]byte) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += " "
		}
		s += string(x)
	}
	return s
}
