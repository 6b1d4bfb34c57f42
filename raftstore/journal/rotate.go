package journal

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// firstFileSize is the most an open's first journal file holds: it is
// fallocated, not zeroed (zeroFile), so a busy writer leaves it soon for the
// rotator's zeroed spares.
const firstFileSize = 1 << 20

// zeroChunk is how much of a spare zeroFile writes before each fdatasync: a
// burst small enough not to hold up the writer's flushes behind it, and the
// longest a writer that needs the spare waits for it.
const zeroChunk = 256 << 10

// rotate switches to the rotator's spare file, grown first when it has no
// room for need bytes, and hands the full one to the rotator. It waits for
// the spare only while the rotator still checkpoints the file before. Called
// with j.mu held.
func (j *Journal) rotate(need int64) error {
	j.halfFull() // a record that jumped past half: the rotator waits for it
	select {
	case j.need <- struct{}{}: // stop zeroing the spare: it is needed now
	default:
	}
	var s spareFile
	select {
	case s = <-j.spare:
	case <-j.rotated:
		select {
		case s = <-j.spare: // the failure it stopped on
		default:
			return ErrClosed
		}
	}
	if s.err != nil {
		return s.err
	}
	size := j.cfg.FileSize
	if size < need { // a batch larger than a file: a file of its own
		_ = unix.Fallocate(int(s.f.Fd()), 0, 0, need) // without it the file grows (createFile)
		if err := s.f.Sync(); err != nil {
			s.f.Close()
			return fmt.Errorf("journal: sync %s: %w", s.f.Name(), err)
		}
		size = need
	}
	j.full <- struct{}{} // never blocks: one per spare
	j.filesMu.Lock()
	j.files[j.seq+1] = s.f
	j.filesMu.Unlock()
	j.f, j.seq, j.off, j.size = s.f, j.seq+1, 0, size
	j.halfSent = false
	return nil
}

// halfFull tells the rotator, once per file, that the current file is half
// full (or that the writer needs the spare now). Called with j.mu held.
func (j *Journal) halfFull() {
	if !j.halfSent {
		j.halfSent = true
		j.half <- struct{}{} // never blocks: once per file, and the rotator takes it before the next
	}
}

// rotator runs from Open until Stop: it creates file seq, the spare; once
// the writer's file (seq-1) is half full, it writes zeros over the spare
// (zeroFile) and offers it to the writer; once the writer has filled the file
// before it, it removes the full files it can (reclaim) and starts over with
// the next sequence number. A failure goes to the writer in place of the next
// spare, and the rotator returns.
func (j *Journal) rotator(seq uint64) {
	defer close(j.rotated)
	var err error
	for {
		s := spareFile{err: err}
		if err == nil {
			s.f, s.err = createFile(j.dir, seq, j.cfg.FileSize)
		}
		if s.err == nil {
			select {
			case <-j.half:
			case <-j.stop:
				s.f.Close() // empty: the next open replays nothing from it
				return
			}
			if s.err = zeroFile(s.f, j.cfg.FileSize, j.need); s.err != nil {
				s.f.Close()
				s.f = nil
			}
		}
		select {
		case j.spare <- s:
		case <-j.stop:
			if s.f != nil {
				s.f.Close() // empty: the next open replays nothing from it
			}
			return
		}
		if s.err != nil {
			return
		}
		select {
		case <-j.full:
		case <-j.stop:
			return
		}
		select {
		case <-j.need: // sent for the switch just made, after the spare was ready
		default:
		}
		j.retained = append(j.retained, seq-1)
		err = j.reclaim()
		seq++
	}
}

// reclaim removes the oldest full files, in order, as long as no tail holds
// an entry in them; when more than KeepFiles full files remain, it first
// moves the oldest one's entries into the store behind (migrate). Files go
// oldest first only: a record's effect may depend on the records before it
// (a deletion). On the rotator only.
func (j *Journal) reclaim() error {
	for len(j.retained) > 0 {
		seq := j.retained[0]
		if j.tails.Live(seq) > 0 {
			if len(j.retained) <= j.cfg.KeepFiles {
				return nil
			}
			if err := j.moveOut(seq); err != nil {
				return fmt.Errorf("journal: move the entries of %s: %w", FileName(seq), err)
			}
		}
		if err := j.checkpoint(seq); err != nil {
			return err
		}
		j.retained = j.retained[1:]
	}
	return nil
}

// moveOut moves every entry the tails hold in full file seq into the store
// behind (migrate, a chunk at a time). The store behind first takes what was
// handed to it before the file filled (quiesce), such as the deletion of an
// older copy of an entry stored again in it (Tail.Journaled), which must not
// come after the move of the entry. On the rotator only.
func (j *Journal) moveOut(seq uint64) error {
	if err := j.quiesce(); err != nil {
		return err
	}
	for j.tails.Live(seq) > 0 {
		n, err := j.migrate(seq)
		if err != nil {
			return err
		}
		if n == 0 && j.tails.Live(seq) > 0 { // a deletion may have taken the last ones meanwhile
			return fmt.Errorf("%w: it counts %d live entries, the tails hold none", ErrCorrupt, j.tails.Live(seq))
		}
	}
	return nil
}

// checkpoint waits until the store behind holds the records of the full
// file seq (quiesce), makes it durable (sync), and closes and removes the
// file. On the rotator only.
func (j *Journal) checkpoint(seq uint64) error {
	if err := j.quiesce(); err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	if err := j.sync(); err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	return j.removeFile(seq)
}

// removeFile closes and removes journal file seq, once its entries are
// elsewhere or gone, after any read of it in progress (Read).
func (j *Journal) removeFile(seq uint64) error {
	j.filesMu.Lock()
	f := j.files[seq]
	delete(j.files, seq)
	j.filesMu.Unlock()
	if f != nil {
		f.Close()
	}
	return j.remove([]uint64{seq})
}

// zeroFile writes zeros over f's first size bytes and makes them durable. A
// record written into blocks that were allocated but never written
// (fallocate's) makes its fdatasync also record that they now hold data, an
// extra synchronous metadata write on ext4: on the development VM a 4 KB
// record's write and fdatasync took 93-123 µs in a zeroed file against
// 187-193 in a fallocated one (2 KB: 109-134 against 137-145; 600 bytes
// alike), and a single node under 64 clients made a median 1.09x the lock
// cycles per second (DESIGN.md). The rotator zeroes each spare, once the
// writer's file is half full (so a journal that never fills a file, most of
// the tests', writes no zeros), before the writer gets it; the file an open
// starts with is only fallocated, so as not to delay the open by the write,
// and small (firstFileSize).
//
// It stops early, with the rest of f only fallocated, when need says the
// writer needs f now: a busy writer fills the second half of its first file
// (firstFileSize) in about a tenth of a second, and must not wait for a
// whole spare's zeros.
func zeroFile(f *os.File, size int64, need <-chan struct{}) error {
	z := make([]byte, min(zeroChunk, size))
	for off := int64(0); off < size; off += int64(len(z)) {
		select {
		case <-need:
			return nil
		default:
		}
		n := min(int64(len(z)), size-off)
		if _, err := f.WriteAt(z[:n], off); err != nil {
			return fmt.Errorf("journal: zero %s: %w", f.Name(), err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("journal: zero %s: %w", f.Name(), err)
		}
	}
	return nil
}
