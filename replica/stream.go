package replica

import (
	"bytes"
	"context"
	"fmt"
)

// follow reads the command stream from pos until it fails: each pass parses
// every whole command buffered, hands them to the sink (Apply, at most
// MaxBatch at a time), acknowledges what was committed, then reads the
// socket once more.
func (l *Link) follow(ctx context.Context, rd *reader, w *writer, pos Position) error {
	f := &follower{
		l: l, ctx: ctx, w: w,
		replID: pos.ReplID,
		off:    pos.Offset, db: pos.DB,
		clean: pos.Offset, cleanDB: pos.DB,
		recorded: pos.Offset,
	}
	p := &parser{rd: rd, n: -1, bulk: -1}
	for {
		for {
			args, size, ok, err := p.next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if err := f.item(args, size); err != nil {
				return err
			}
		}
		if err := f.flush(true); err != nil {
			return err
		}
		if err := rd.fill(p.need); err != nil {
			return err
		}
	}
}

// follower turns the stream's commands into the sink's calls.
type follower struct {
	l   *Link
	ctx context.Context
	w   *writer

	replID string
	off    int64 // the offset after the last command parsed
	db     int   // the database selected at off
	// clean is the offset before which every byte is a command in batch
	// or committed, or carries no command: the offset to acknowledge once
	// batch is committed. It stays before an open MULTI.
	clean   int64
	cleanDB int
	// recorded is the last offset the sink was given (Apply, Advance or
	// the session's start).
	recorded int64
	batch    []Command
	tx       *Command // the open MULTI, nil outside one
}

// item takes one command of size bytes (nil args: an empty one).
func (f *follower) item(args [][]byte, size int) error {
	f.off += int64(size)
	if len(args) == 0 {
		f.noCommand()
		return nil
	}
	name := args[0]
	if f.tx != nil {
		switch {
		case is(name, "EXEC"):
			f.tx.End, f.tx.DB = f.off, f.db
			f.batch = append(f.batch, *f.tx)
			f.tx = nil
			f.clean, f.cleanDB = f.off, f.db
			if len(f.batch) >= f.l.cfg.MaxBatch {
				return f.flush(false)
			}
		case is(name, "SELECT"):
			return f.selectDB(args)
		case is(name, "MULTI"):
			return fmt.Errorf("%w: MULTI inside MULTI at offset %d", ErrProtocol, f.off)
		case is(name, "PING"), is(name, "REPLCONF"):
			// Carries no command; the transaction holds the offset back.
		default:
			f.tx.Tx = append(f.tx.Tx, args)
			f.tx.TxDB = append(f.tx.TxDB, f.db)
		}
		return nil
	}
	switch {
	case is(name, "MULTI"):
		f.tx = &Command{}
	case is(name, "SELECT"):
		if err := f.selectDB(args); err != nil {
			return err
		}
		f.noCommand()
	case is(name, "PING"):
		f.noCommand()
	case is(name, "REPLCONF"):
		if len(args) >= 2 && is(args[1], "GETACK") {
			// Redis answers with its offset before the GETACK, every
			// command before it applied: commit the batch first.
			if err := f.flush(false); err != nil {
				return err
			}
			if err := f.w.ack(f.l.acked.Load()); err != nil {
				return err
			}
		}
		f.noCommand()
	case is(name, "EXEC"):
		return fmt.Errorf("%w: EXEC without MULTI at offset %d", ErrProtocol, f.off)
	default:
		f.batch = append(f.batch, Command{DB: f.db, Args: args, End: f.off})
		f.clean, f.cleanDB = f.off, f.db
		if len(f.batch) >= f.l.cfg.MaxBatch {
			return f.flush(false)
		}
	}
	return nil
}

// noCommand marks the bytes up to off as carrying no command.
func (f *follower) noCommand() {
	if f.tx == nil {
		f.clean, f.cleanDB = f.off, f.db
	}
}

// selectDB follows SELECT db.
func (f *follower) selectDB(args [][]byte) error {
	db, ok := parseInt(argOr(args, 1))
	if len(args) != 2 || !ok || db < 0 || db > 1<<20 {
		return fmt.Errorf("%w: SELECT %q at offset %d", ErrProtocol, clip(argOr(args, 1)), f.off)
	}
	f.db = int(db)
	return nil
}

func argOr(args [][]byte, i int) []byte {
	if i < len(args) {
		return args[i]
	}
	return nil
}

// flush commits the batch (Apply), then, with advance, records in the sink
// bytes past it that carry no command (Advance), and acknowledges clean.
func (f *follower) flush(advance bool) error {
	if len(f.batch) > 0 {
		if err := f.l.sink.Apply(f.ctx, f.batch); err != nil {
			return err
		}
		f.recorded = f.batch[len(f.batch)-1].End
		f.batch = nil // the sink's now
	}
	if advance && f.clean > f.recorded {
		if err := f.l.sink.Advance(f.ctx, Position{ReplID: f.replID, Offset: f.clean, DB: f.cleanDB}); err != nil {
			return err
		}
		f.recorded = f.clean
	}
	f.l.acked.Store(f.clean)
	return nil
}

// is reports whether a command name is name (ASCII, any case).
func is(b []byte, name string) bool {
	return len(b) == len(name) && bytes.EqualFold(b, []byte(name))
}

// parser reads the stream's commands (RESP arrays of bulk strings) out of
// a reader's buffer without reading the socket. It keeps its progress
// through a command that has not fully arrived, so a long command is
// scanned once however many reads it takes.
type parser struct {
	rd    *reader
	n     int      // elements announced by the command in progress; -1 before its header
	bulk  int      // length of the element in progress; -1 before its header
	pos   int      // bytes of the command in progress scanned, from rd.r
	spans [][2]int // where its elements lie, from rd.r
	// need is how many unread bytes the command in progress needs before
	// it can go on (0 when unknown): the reader grows towards it.
	need int
}

// next returns the next command and its size in bytes, or ok false when
// the buffer does not hold it whole yet. An empty command (*0, *-1, which
// Redis skips) is nil args with its size. The args are a copy.
func (p *parser) next() (args [][]byte, size int, ok bool, err error) {
	b := p.rd.buffered()
	p.need = 0
	if p.n < 0 {
		line, adv, ok, err := headerLine(b[p.pos:])
		if !ok || err != nil {
			return nil, 0, false, err
		}
		if line[0] != '*' {
			return nil, 0, false, fmt.Errorf("%w: %q where a command should start", ErrProtocol, clip(line))
		}
		n, valid := parseInt(line[1:])
		if !valid {
			return nil, 0, false, fmt.Errorf("%w: bad array length %q", ErrProtocol, clip(line))
		}
		if n > MaxArgs {
			return nil, 0, false, fmt.Errorf("%w: an array of %d elements (at most %d)", ErrTooLarge, n, MaxArgs)
		}
		p.pos += adv
		if n <= 0 {
			return nil, p.done(), true, nil
		}
		p.n = int(n)
		p.spans = p.spans[:0]
	}
	for len(p.spans) < p.n {
		if p.bulk < 0 {
			line, adv, ok, err := headerLine(b[p.pos:])
			if !ok || err != nil {
				return nil, 0, false, err
			}
			if line[0] != '$' {
				return nil, 0, false, fmt.Errorf("%w: %q where a bulk string should start", ErrProtocol, clip(line))
			}
			n, valid := parseInt(line[1:])
			if !valid || n < 0 {
				return nil, 0, false, fmt.Errorf("%w: bad bulk length %q", ErrProtocol, clip(line))
			}
			if n > MaxBulk {
				return nil, 0, false, fmt.Errorf("%w: a bulk of %d bytes (at most %d)", ErrTooLarge, n, MaxBulk)
			}
			if int64(p.pos+adv)+n+2 > MaxCommand {
				return nil, 0, false, fmt.Errorf("%w: a command above %d bytes", ErrTooLarge, MaxCommand)
			}
			p.pos += adv
			p.bulk = int(n)
		}
		end := p.pos + p.bulk
		if end+2 > len(b) {
			p.need = end + 2
			return nil, 0, false, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return nil, 0, false, fmt.Errorf("%w: a bulk string not followed by CRLF", ErrProtocol)
		}
		p.spans = append(p.spans, [2]int{p.pos, end})
		p.pos = end + 2
		p.bulk = -1
	}
	total := 0
	for _, s := range p.spans {
		total += s[1] - s[0]
	}
	backing := make([]byte, 0, total)
	args = make([][]byte, len(p.spans))
	for i, s := range p.spans {
		start := len(backing)
		backing = append(backing, b[s[0]:s[1]]...)
		args[i] = backing[start:len(backing):len(backing)]
	}
	return args, p.done(), true, nil
}

// done consumes the command in progress and returns its size.
func (p *parser) done() int {
	size := p.pos
	p.rd.r += size
	p.n, p.bulk, p.pos = -1, -1, 0
	return size
}

// headerLine finds the CRLF-ended line at the start of b: the line without
// CRLF and the bytes it takes, ok false when it is not whole yet.
func headerLine(b []byte) (line []byte, adv int, ok bool, err error) {
	i := bytes.IndexByte(b, '\r')
	if i < 0 || i+1 >= len(b) {
		if len(b) > maxLine {
			return nil, 0, false, fmt.Errorf("%w: a header line above %d bytes", ErrProtocol, maxLine)
		}
		return nil, 0, false, nil
	}
	if b[i+1] != '\n' || i == 0 {
		return nil, 0, false, fmt.Errorf("%w: a malformed header line %q", ErrProtocol, clip(b[:i]))
	}
	return b[:i], i + 2, true, nil
}

// parseInt parses a decimal integer as Redis's string2ll does for lengths:
// an optional '-', then 1 to 18 digits.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
