package outcome

import "testing"

// Every outcome has a name, and the classes the store decides by hold exactly
// the outcomes their doc comments list.
func TestClasses(t *testing.T) {
	seen := map[string]bool{}
	for o := Done; o < count; o++ {
		n := o.String()
		if n == "" || seen[n] || !o.Valid() {
			t.Errorf("outcome %d: name %q (valid %v), names must be distinct", o, n, o.Valid())
		}
		seen[n] = true
		if got, want := o.Refused(), o == NotApplied || o == ReadNotServed; got != want {
			t.Errorf("%v.Refused() = %v", o, got)
		}
		if got, want := o.SlotRefused(), o == Moved || o == Moving; got != want {
			t.Errorf("%v.SlotRefused() = %v", o, got)
		}
		if got, want := o.Retryable(), o == NotApplied || o == ReadNotServed || o == Moving || o == ShuttingDown; got != want {
			t.Errorf("%v.Retryable() = %v", o, got)
		}
	}
	if o := Outcome(200); o.Valid() || o.String() != "outcome(200)" {
		t.Errorf("an unknown outcome: valid %v, name %q", o.Valid(), o.String())
	}
}
