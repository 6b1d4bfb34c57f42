package fsm

import (
	"encoding/binary"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// lzfListPayload is a DUMP payload of a list (RDB type 18, quicklist v2) of
// one packed node: a listpack of entries "01 01" (the integer 1 and its
// back-length) under the count 0xffff (unknown), LZF-compressed as one
// literal run and m back references that each expand 3 bytes to 264 (132
// entries). It returns the payload and its number of elements: m = 29000 is
// the reviewer's 87 KB payload of 3,828,001 elements.
func lzfListPayload(m int) (p []byte, elems int) {
	elems = 132*m + 1
	total := 6 + 2*elems + 1
	lzf := []byte{7} // a literal run of 8 bytes: the listpack header, one entry
	lzf = binary.LittleEndian.AppendUint32(lzf, uint32(total))
	lzf = binary.LittleEndian.AppendUint16(lzf, 0xffff)
	lzf = append(lzf, 1, 1)
	for range m {
		lzf = append(lzf, 0xe0, 0xff, 0) // copy 264 bytes from 1 back
	}
	lzf = append(lzf, 0, 0xff)     // a literal run of 1 byte: the terminator
	body := []byte{18, 1, 2, 0xc3} // quicklist v2, 1 node, packed, an LZF string
	body = appendLen32(body, len(lzf))
	body = appendLen32(body, total)
	body = append(body, lzf...)
	return withFooter(body), elems
}

// cost is what fn allocated (bytes) and how long it took.
func cost(fn func()) (uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	fn()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}

// restoreTx applies one transaction entry of a RESTORE key 0 payload per
// key and returns its replies.
func (h *harness) restoreTx(p []byte, keys ...string) []resp.Value {
	h.t.Helper()
	var cmds [][][]byte
	for _, k := range keys {
		cmds = append(cmds, [][]byte{[]byte("RESTORE"), []byte(k), []byte("0"), p})
	}
	h.index++
	e := command.Entry{Kind: command.KindTx, Time: h.now, Wall: wall + h.now, Args: command.TxArgs(command.Tx{Cmds: cmds})}
	v := h.ks.Apply(h.index, e)
	if len(v.Elems) != len(keys) {
		h.t.Fatalf("transaction of %d RESTOREs answered %v", len(keys), v)
	}
	return v.Elems
}

// The reviewer's payload (87 KB decoding to 3.8 million elements: 841 MiB
// allocated, 277 MiB kept, a second, and accepted) is refused quickly,
// having allocated its LZF output (7.7 MB) and little else, and changes
// nothing.
func TestRestoreLZFBombRefused(t *testing.T) {
	h := migrating(t)
	p, elems := lzfListPayload(29000)
	var got string
	alloc, took := cost(func() { got = h.doArgs("RESTORE", "k", "0", string(p)) })
	t.Logf("%d-byte payload of %d elements: %q in %v, %d bytes allocated", len(p), elems, got, took, alloc)
	if got != "-"+errRestoreTooLarge+"\r\n" {
		t.Fatalf("RESTORE = %q", got)
	}
	if alloc > 32<<20 {
		t.Errorf("allocated %d bytes to refuse it", alloc)
	}
	if took > 5*time.Second {
		t.Errorf("took %v to refuse it", took)
	}
	if got := h.do("EXISTS k"); got != ":0\r\n" {
		t.Errorf("EXISTS k = %q", got)
	}
}

// The RESTOREs of one entry share one budget of MaxRestoreBytes: three
// lists of 330,001 elements (about 21 MB each as counted) fit, a fourth in
// the same transaction is refused with the per-entry error and not created,
// and the next entry has a fresh budget.
func TestRestoreEntryBudget(t *testing.T) {
	h := migrating(t)
	p, elems := lzfListPayload(2500)
	replies := h.restoreTx(p, "a", "b", "c", "d")
	for i, want := range []string{"+OK", "+OK", "+OK", "-" + errRestoreEntryTooLarge} {
		if got := string(resp.Append(nil, replies[i], 2)); got != want+"\r\n" {
			t.Errorf("RESTORE %d in the transaction = %q, want %q", i, got, want)
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		if got := h.do("LLEN " + k); got != ":"+strconv.Itoa(elems)+"\r\n" {
			t.Errorf("LLEN %s = %q", k, got)
		}
	}
	if got := h.do("EXISTS d"); got != ":0\r\n" {
		t.Errorf("EXISTS d = %q", got)
	}
	if got := h.doArgs("RESTORE", "d", "0", string(p)); got != "+OK\r\n" {
		t.Errorf("RESTORE d in an entry of its own = %q", got)
	}
}

// Refused RESTOREs count what they decoded before they stopped: a
// transaction of the reviewer's payload ten times decodes (and allocates)
// about eight payloads' LZF output in all, the first ones refused as too
// large, the rest as over the entry's budget.
func TestRestoreEntryBudgetCountsRefused(t *testing.T) {
	h := migrating(t)
	p, _ := lzfListPayload(29000)
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	var replies []resp.Value
	alloc, took := cost(func() { replies = h.restoreTx(p, keys...) })
	t.Logf("10 refused RESTOREs: %d bytes allocated in %v", alloc, took)
	single, entry := 0, 0
	for i, r := range replies {
		switch string(resp.Append(nil, r, 2)) {
		case "-" + errRestoreTooLarge + "\r\n":
			if entry > 0 {
				t.Errorf("RESTORE %d: the single-value error after the entry's", i)
			}
			single++
		case "-" + errRestoreEntryTooLarge + "\r\n":
			entry++
		default:
			t.Errorf("RESTORE %d = %v", i, r)
		}
	}
	if single == 0 || entry == 0 || single > 9 {
		t.Errorf("%d refused as too large, %d as over the entry's budget", single, entry)
	}
	if alloc > MaxRestoreBytes+32<<20 {
		t.Errorf("allocated %d bytes", alloc)
	}
	if got := h.do("DBSIZE"); got != ":0\r\n" {
		t.Errorf("DBSIZE = %q", got)
	}
}

// A RESTORE that uses nearly the whole budget succeeds: a list of about a
// million elements. It measures what MaxRestoreBytes lets one entry cost
// (the numbers in MaxRestoreBytes's comment).
func TestRestoreFullBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("a million-element RESTORE")
	}
	h := migrating(t)
	// Each element is charged 64 bytes and its 2 listpack bytes.
	m := (MaxRestoreBytes - 1<<20) / 66 / 132
	p, elems := lzfListPayload(m)
	var got string
	alloc, took := cost(func() { got = h.doArgs("RESTORE", "k", "0", string(p)) })
	runtime.GC()
	var kept runtime.MemStats
	runtime.ReadMemStats(&kept)
	t.Logf("%d-byte payload of %d elements: %q in %v, %d MiB allocated, heap now %d MiB",
		len(p), elems, got, took, alloc>>20, kept.HeapAlloc>>20)
	if got != "+OK\r\n" {
		t.Fatalf("RESTORE = %q", got)
	}
	if got := h.do("LLEN k"); got != ":"+strconv.Itoa(elems)+"\r\n" {
		t.Errorf("LLEN k = %q", got)
	}
	if alloc > 4*MaxRestoreBytes {
		t.Errorf("allocated %d bytes", alloc)
	}
	// One more back reference's worth of elements per 64 KiB of budget left
	// would not fit: the bound is the budget, not the element count.
	p, _ = lzfListPayload((MaxRestoreBytes + 1<<20) / 66 / 132)
	if got := h.doArgs("RESTORE", "k2", "0", string(p)); got != "-"+errRestoreTooLarge+"\r\n" {
		t.Errorf("RESTORE just over the budget = %q", got)
	}
}
