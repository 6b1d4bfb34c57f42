package replica

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	"github.com/lockd/lockd/rdb"
)

// transfer receives the RDB of a full resync starting at at and loads it
// into the sink (readSyncBulkPayload). The master sends newlines while it
// prepares the RDB, then either "$<len>\r\n" and len bytes, or, diskless,
// "$EOF:<40-byte mark>\r\n", the RDB and the mark. It returns where the
// stream starts: at, in the database the RDB's repl-stream-db names.
func (l *Link) transfer(ctx context.Context, rd *reader, at Position) (Position, error) {
	var line []byte
	for {
		var err error
		if line, err = rd.readLine(); err != nil {
			return Position{}, err
		}
		if len(line) > 0 {
			break
		}
	}
	var body io.Reader
	switch {
	case line[0] == '-':
		return Position{}, fmt.Errorf("%w: master aborted the transfer: %s", ErrRefused, line[1:])
	case line[0] != '$':
		return Position{}, fmt.Errorf("%w: a transfer starting %q", ErrProtocol, clip(line))
	case bytes.HasPrefix(line[1:], []byte("EOF:")) && len(line) >= 5+replIDLen:
		mark := bytes.Clone(line[5 : 5+replIDLen])
		l.syncLeft.Store(-1)
		l.syncRead.Store(0)
		body = &markedBody{rd: rd, mark: mark, read: &l.syncRead}
		l.log.Info("receiving a streamed RDB")
	default:
		n, err := strconv.ParseInt(string(line[1:]), 10, 64)
		if err != nil || n < 0 {
			return Position{}, fmt.Errorf("%w: a transfer starting %q", ErrProtocol, clip(line))
		}
		l.syncLeft.Store(n)
		l.syncRead.Store(0)
		body = &sizedBody{rd: rd, left: n, leftStat: &l.syncLeft, read: &l.syncRead}
		l.log.Info("receiving an RDB", "bytes", n)
	}

	if err := l.sink.BeginFull(ctx, at); err != nil {
		return Position{}, err
	}
	dec := rdb.NewReaderLimit(body, rdb.ReplicaValueLimit)
	keys := 0
	for {
		e, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Position{}, fmt.Errorf("replica: decoding the RDB: %w", err)
		}
		if err := l.sink.Load(ctx, e); err != nil {
			return Position{}, err
		}
		keys++
	}
	// The decoder may stop before the body's end (say before the checksum):
	// the stream starts after it.
	if _, err := io.Copy(io.Discard, body); err != nil {
		return Position{}, err
	}
	if s, ok := dec.Aux()["repl-stream-db"]; ok {
		if db, err := strconv.Atoi(s); err == nil && db >= 0 {
			at.DB = db
		}
	}
	if err := l.sink.EndFull(ctx, at); err != nil {
		return Position{}, err
	}
	l.log.Info("RDB loaded", "keys", keys, "offset", at.Offset)
	return at, nil
}

// clip shortens a line for an error message.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// sizedBody is an RDB sent with its length: exactly left more bytes.
type sizedBody struct {
	rd       *reader
	left     int64
	leftStat *atomic.Int64
	read     *atomic.Int64
}

func (b *sizedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rd.Read(p)
	b.left -= int64(n)
	b.leftStat.Store(b.left)
	b.read.Add(int64(n))
	return n, err
}

// markedBody is an RDB streamed without a length and ended by a 40-byte
// mark. The master sends nothing after the mark until the replica's first
// ACK, but the body does not rely on it: it holds back the last 39 bytes
// buffered until it knows they do not begin the mark, and leaves what
// follows the mark unread.
type markedBody struct {
	rd   *reader
	mark []byte
	read *atomic.Int64
	done bool
}

func (b *markedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	for len(b.rd.buffered()) < len(b.mark) {
		if err := b.rd.fill(len(b.mark)); err != nil {
			return 0, err
		}
	}
	buf := b.rd.buffered()
	// Bytes before a mark found are the RDB's; otherwise every byte that
	// cannot begin a mark within what is buffered.
	safe := len(buf) - len(b.mark) + 1
	end := bytes.Index(buf, b.mark)
	if end >= 0 {
		safe = end
	}
	n := copy(p, buf[:safe])
	b.rd.r += n
	b.read.Add(int64(n))
	if end >= 0 && n == end {
		b.rd.r += len(b.mark)
		b.done = true
		if n == 0 {
			return 0, io.EOF
		}
	}
	return n, nil
}
