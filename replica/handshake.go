package replica

import (
	"fmt"
	"strconv"
	"strings"
)

// replIDLen is the length of a replication id (CONFIG_RUN_ID_SIZE).
const replIDLen = 40

// psyncResult is the master's answer to PSYNC.
type psyncResult struct {
	full bool     // +FULLRESYNC: an RDB follows
	at   Position // where the stream starts (after the RDB if full)
}

// handshake runs Redis 7's replica handshake (syncWithMaster): PING, then
// AUTH, REPLCONF listening-port and REPLCONF capa eof capa psync2 sent
// together and their replies read in order, then PSYNC from pos.
func (l *Link) handshake(rd *reader, w *writer, pos Position) (psyncResult, error) {
	if err := w.command("PING"); err != nil {
		return psyncResult{}, err
	}
	reply, err := rd.readReply()
	if err != nil {
		return psyncResult{}, err
	}
	// A master that wants AUTH answers the PING with -NOAUTH (-NOPERM for
	// an ACL default user without +ping): the AUTH below settles it.
	if reply[0] != '+' && !strings.HasPrefix(reply, "-NOAUTH") &&
		!strings.HasPrefix(reply, "-NOPERM") && !strings.HasPrefix(reply, "-ERR operation not permitted") {
		return psyncResult{}, fmt.Errorf("%w: PING: %s", ErrRefused, reply)
	}

	auth := l.cfg.Password != ""
	if auth {
		args := []string{"AUTH", l.cfg.Password}
		if l.cfg.User != "" {
			args = []string{"AUTH", l.cfg.User, l.cfg.Password}
		}
		if err := w.command(args...); err != nil {
			return psyncResult{}, err
		}
	}
	if err := w.command("REPLCONF", "listening-port", strconv.Itoa(l.cfg.ListenPort)); err != nil {
		return psyncResult{}, err
	}
	if err := w.command("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return psyncResult{}, err
	}
	if auth {
		if reply, err = rd.readReply(); err != nil {
			return psyncResult{}, err
		}
		if reply[0] == '-' {
			return psyncResult{}, fmt.Errorf("%w: AUTH: %s", ErrRefused, reply)
		}
	}
	// Errors to REPLCONF are not critical (Redis only logs them): a master
	// that does not know capa eof sends the RDB with a length.
	for _, what := range []string{"REPLCONF listening-port", "REPLCONF capa"} {
		if reply, err = rd.readReply(); err != nil {
			return psyncResult{}, err
		}
		if reply[0] == '-' {
			l.log.Info("master does not understand "+what, "reply", reply)
		}
	}

	id, off := "?", "-1"
	if pos.ReplID != "" {
		id, off = pos.ReplID, strconv.FormatInt(pos.Offset+1, 10)
	}
	if err := w.command("PSYNC", id, off); err != nil {
		return psyncResult{}, err
	}
	if reply, err = rd.readReply(); err != nil {
		return psyncResult{}, err
	}
	return parsePsync(reply, pos)
}

// parsePsync reads the reply to PSYNC sent from pos
// (slaveTryPartialResynchronization).
func parsePsync(reply string, pos Position) (psyncResult, error) {
	switch {
	case strings.HasPrefix(reply, "+FULLRESYNC"):
		// +FULLRESYNC <replid> <offset>
		f := strings.Fields(reply)
		if len(f) != 3 || len(f[1]) != replIDLen {
			return psyncResult{}, fmt.Errorf("%w: PSYNC: %q", ErrProtocol, reply)
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || off < 0 {
			return psyncResult{}, fmt.Errorf("%w: PSYNC: %q", ErrProtocol, reply)
		}
		return psyncResult{full: true, at: Position{ReplID: f[1], Offset: off}}, nil
	case strings.HasPrefix(reply, "+CONTINUE"):
		// +CONTINUE [<new replid>]: the stream goes on from pos, under
		// the new id if the master has one (it was promoted, or restarted
		// from its RDB).
		if pos.ReplID == "" {
			return psyncResult{}, fmt.Errorf("%w: +CONTINUE to PSYNC ? -1", ErrProtocol)
		}
		at := pos
		if rest := strings.TrimSpace(reply[len("+CONTINUE"):]); len(rest) == replIDLen {
			at.ReplID = rest
		}
		return psyncResult{at: at}, nil
	case strings.HasPrefix(reply, "-NOMASTERLINK"), strings.HasPrefix(reply, "-LOADING"):
		return psyncResult{}, fmt.Errorf("%w: %s", ErrNotReady, reply)
	case reply[0] == '-':
		return psyncResult{}, fmt.Errorf("%w: PSYNC: %s", ErrRefused, reply)
	default:
		return psyncResult{}, fmt.Errorf("%w: PSYNC: %q", ErrProtocol, reply)
	}
}
