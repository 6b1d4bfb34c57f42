// Package readn reads a frame whose length its sender announced without
// trusting the announcement: the memory it takes follows the bytes that
// arrive, not the length announced. The peer port's frame readers
// (raftstore/forward, raftstore/appendpipe) use it, so that a connection
// announcing a 512 MiB frame and sending ten bytes costs about FirstAlloc.
package readn

import (
	"errors"
	"io"
)

// FirstAlloc is the most Read allocates before any of a frame has arrived.
const FirstAlloc = 64 << 10

// Read reads exactly n bytes from r into a new slice of length n. For n up to
// FirstAlloc it allocates n at once; above, it starts with FirstAlloc and
// doubles the buffer each time the bytes received fill it, so it never holds
// more than about twice what has arrived (plus the buffer it outgrew, until
// the collector takes it), and copies about n bytes more than a single
// allocation would. A frame cut short gives io.ErrUnexpectedEOF (io.EOF only
// when nothing of it arrived) or r's error; the bytes are then dropped.
func Read(r io.Reader, n int) ([]byte, error) {
	if n < 0 {
		return nil, errors.New("readn: negative length")
	}
	if n <= FirstAlloc {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	b := make([]byte, FirstAlloc)
	got := 0
	for {
		m, err := io.ReadFull(r, b[got:])
		got += m
		if err != nil {
			if errors.Is(err, io.EOF) && got > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if got == n {
			return b, nil
		}
		nb := make([]byte, min(n, 2*len(b)))
		copy(nb, b)
		b = nb
	}
}
