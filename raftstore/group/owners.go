package group

import (
	"context"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Users and session owners on the store (issue 44; the rules are
// command.MayUseSession's).
//
//   - Every client request carries its user (command.Request.User), and a
//     forwarded one takes it to the leader, which checks the request against
//     that user's replicated ACL before it runs it (doForwarded): a follower's
//     front door is not the only check.
//   - A session belongs to the user who opened it. The owner enters the log
//     with the SESSION.OPEN (a KindScriptAs entry), so every replica records
//     the same, and the per-user cap is decided where the count is exact: in
//     the FSM, from the replicated settings.
//   - SESSION.KEEPALIVE, SESSION.CLOSE and LOCK.ACQUIRE … SESSION are checked
//     by the leader before anything is proposed (checkSessions, keepalive),
//     against the session table it has applied. That is enough: an owner
//     never changes, and a client learns a session id only from the reply to
//     its SESSION.OPEN, which the leader sends after applying it (a new
//     leader applies every committed entry before it serves), so a session a
//     request may legitimately name is in the leader's table; one that is not
//     (a guess at an id still in flight) is answered NOSESSION, as the entry
//     would be. Scripts' session commands are checked in the FSM (their
//     entries carry the user).
//   - None of this may reach a replica that does not understand it. The
//     group's settings (command.Settings, a KindSettings entry) turn owners
//     on once every member greeted this node's pipelines with
//     pipeVersionOwners, and stay on; until then sessions have no owner, and
//     forwarded requests carry only what the previous version decodes
//     (command.EncodeUserRequests). The same entry replicates the leader's
//     -max-sessions-per-user.

// DefaultMaxSessionsPerUser is Config.MaxSessionsPerUser's default: far more
// than one client process opens (one session each, usually), far fewer than
// the 100,000 one tenant opened in under a second in issue 44.
const DefaultMaxSessionsPerUser = 10000

// wantSettings is the settings this node's leadership replicates.
func (s *Store) wantSettings() command.Settings {
	n := s.cfg.MaxSessionsPerUser
	switch {
	case n == 0:
		n = DefaultMaxSessionsPerUser
	case n < 0:
		n = 0
	}
	f := command.FeatureOwners | pipeTypesFeatures | pipeMigrationFeatures
	if s.cfg.StrictNX {
		f &^= command.FeatureSameValueNX
	}
	return command.Settings{Features: f, MaxSessionsPerUser: n}
}

// settings returns the group's replicated settings.
func (s *Store) settings() command.Settings {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.ks.Settings()
}

// OwnersOn reports whether the group's sessions record owners.
func (s *Store) OwnersOn() bool { return s.settings().Owners() }

// syncSettings, on the leader, proposes the settings this node wants when
// they differ from the replicated ones: the first time only once every other
// member said it understands them (membersAtLeast), later whenever this
// node's cap differs (a leader with another -max-sessions-per-user). Called on
// the leader's own goroutines; it waits for the entry, bounded by
// ApplyTimeout, and logs a failure (the next tick tries again).
func (s *Store) syncSettings() {
	cur, want := s.settings(), s.wantSettings()
	// Features stay on once on, but for modes, which follow this leader's
	// configuration; a new one goes on once every member understands it.
	want.Features = cur.Features&^command.ModeFeatures | cur.Features&want.Features&command.ModeFeatures |
		s.understood(want.Features&^cur.Features)
	if cur == want || (!cur.Owners() && !want.Owners()) {
		return // nothing new, or nothing before owners (the first settings carry them)
	}
	now, wall := s.clock.read()
	e := command.Entry{Kind: command.KindSettings, Time: now, Wall: wall, Args: command.SettingsArgs(want)}
	if err := s.applyNow(e); err != nil {
		s.log.Debug("settings entry failed", "err", err)
		return
	}
	s.log.Info("settings replicated", "session_owners", want.Owners(), "max_sessions_per_user", want.MaxSessionsPerUser)
}

// ensureFeature turns feature f on before a write that needs it is proposed
// (a sorted set or list write needs FeatureCollections), when every member
// understands it (syncSettings), waiting up to collectionsWait for the
// members' pipelines to greet this leader: a new cluster does not refuse its
// first such writes because its followers have not said their version yet.
// Once the feature is on (it stays on), a settings read.
func (s *Store) ensureFeature(ctx context.Context, f uint64) {
	deadline := time.Now().Add(collectionsWait)
	for s.settings().Features&f == 0 {
		s.syncSettings()
		if s.settings().Features&f != 0 || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// collectionsWait bounds ensureFeature's wait: a pipeline greets within
// milliseconds of the leader's first append; a member that is down never
// does, and its group refuses sorted set and list writes until it returns
// (the state machine's refusal says why).
const collectionsWait = time.Second

// understood returns those of the features f that every other member of the
// group said it understands (membersAtLeast the pipe version that brought
// each).
func (s *Store) understood(f uint64) uint64 {
	if f&command.FeatureOwners != 0 && !s.membersAtLeast(pipeVersionOwners) {
		f &^= command.FeatureOwners
	}
	if f&pipeTypesFeatures != 0 && !s.membersAtLeast(pipeVersionTypes) {
		f &^= pipeTypesFeatures
	}
	if f&pipeMigrationFeatures != 0 && !s.membersAtLeast(pipeVersionMigration) {
		f &^= pipeMigrationFeatures
	}
	return f
}

// gateInternal returns the arguments of an internal entry that a Node built
// (a "propose" Admin), as this group's members can apply it: a session attach
// loses its owner while owners are off.
func (s *Store) gateInternal(kind command.Kind, args [][]byte) [][]byte {
	if kind == command.KindSessionAttach && len(args) == 3 && !s.OwnersOn() {
		return args[:2]
	}
	return args
}

// scriptUser is the user a script of user runs for (KindScriptAs): user when
// the replicated ACL restricts it, else "" (no check).
func (s *Store) scriptUser(user string) string {
	if user == "" || !s.restricted(user) {
		return ""
	}
	return user
}

// restricted reports whether the replicated ACL restricts user (an unknown
// user is restricted: it may run nothing).
func (s *Store) restricted(user string) bool {
	u, ok := command.LookupUser(s.ACL(), user)
	return !ok || !u.Unrestricted()
}

// checkSessions refuses, on the leader, a request of r.User (not "") that
// uses a session it may not use, or one that is not open
// (fsm.Keyspace.CheckSessions): SESSION.CLOSE, LOCK.ACQUIRE … SESSION, and
// such commands in a transaction, whose reply is then that error alone
// (nothing in it runs). A SESSION.OPEN in a transaction is refused to a user
// who does not manage every session once owners are on: a transaction's
// entry carries no user to own it or to count it against the cap.
func (s *Store) checkSessions(r command.Request) (resp.Value, bool) {
	switch op := r.Op.(type) {
	case command.SessionClose:
	case command.LockAcquire:
		if op.Session == 0 {
			return resp.Value{}, false
		}
	case command.Tx:
		return s.checkTxSessions(op, r.User)
	default:
		return resp.Value{}, false
	}
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.ks.CheckSessions(r.Op, r.User)
}

// errTxSessionOpen refuses a SESSION.OPEN inside MULTI (checkSessions).
const errTxSessionOpen = "ERR SESSION.OPEN inside MULTI is not available to this user: open the session outside the transaction"

// checkTxSessions is checkSessions for a transaction's commands.
func (s *Store) checkTxSessions(tx command.Tx, user string) (resp.Value, bool) {
	var ops []command.Op
	for _, args := range tx.Cmds {
		// Parse only the session commands (the FSM parses the rest when it
		// applies the transaction).
		if spec, ok := command.Lookup(args[0]); !ok || !spec.Flags.Has(command.FlagSession) {
			continue
		}
		op, _, err := command.Parse(args)
		if err != nil {
			continue // the transaction answers it
		}
		switch op.(type) {
		case command.SessionOpen, command.SessionClose, command.SessionKeepalive, command.LockAcquire:
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return resp.Value{}, false
	}
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	for _, op := range ops {
		if _, open := op.(command.SessionOpen); open {
			if !s.m.ks.Settings().Owners() {
				continue
			}
			if u, ok := command.LookupUser(s.m.ks.ACL(), user); !ok || !u.ManagesSessions() {
				return resp.Error(errTxSessionOpen), true
			}
			continue
		}
		if v, refused := s.m.ks.CheckSessions(op, user); refused {
			return v, true
		}
	}
	return resp.Value{}, false
}

// doForwarded runs a batch that a follower forwarded: each request that
// carries its user is checked first against that user's ACL as this replica
// knows it (command.User.AuthorizeRequest; an unknown user may run nothing)
// and answered NOPERM, not run, when refused; the others run as doLocal runs
// them, in their order.
func (s *Store) doForwarded(ctx context.Context, reqs []command.Request) []resp.Value {
	return s.authorized(ctx, reqs, s.doLocal)
}

// authorized runs with run the requests of reqs that their users may run
// (each request that carries its user is checked against that user's ACL as
// this replica knows it; an unknown user may run nothing) and answers the
// others NOPERM, keeping reqs' order.
func (s *Store) authorized(ctx context.Context, reqs []command.Request, run func(context.Context, []command.Request) []resp.Value) []resp.Value {
	var out []resp.Value
	var allowed []command.Request
	var at []int
	t := s.ACL()
	for i, r := range reqs {
		if r.User != "" {
			err := error(command.ErrNoPermCommand(fullNameOf(r)))
			if u, ok := command.LookupUser(t, r.User); ok {
				err = u.AuthorizeRequest(r)
			}
			if err != nil {
				if out == nil {
					out = make([]resp.Value, len(reqs))
				}
				out[i] = command.ErrorReply(err)
				continue
			}
		}
		allowed = append(allowed, r)
		at = append(at, i)
	}
	if out == nil {
		return run(ctx, reqs)
	}
	if len(allowed) > 0 {
		for j, v := range run(ctx, allowed) {
			out[at[j]] = v
		}
	}
	return out
}

// fullNameOf names a request in a NOPERM error.
func fullNameOf(r command.Request) string {
	switch {
	case len(r.Args) > 0:
		return command.FullName(r.Args)
	case r.Spec != nil:
		return r.Spec.Name
	}
	return "unknown"
}

// AppliedSessionOwner waits until this replica has applied the entry that
// opened session id (a session's id is that entry's logical index) and
// returns the session's owner ("" none) and whether it is still open. The
// wait is bounded by ElectionWait (ErrNotReadable after it): a Node calls it
// once the group's leader said the session lives, so the entry is committed
// and on its way here.
func (s *Store) AppliedSessionOwner(ctx context.Context, id uint64) (string, bool, error) {
	deadline := time.Now().Add(ElectionWait)
	for {
		s.m.mu.RLock()
		applied := s.m.ks.Logical() >= id
		owner, open := s.m.ks.SessionOwner(id)
		s.m.mu.RUnlock()
		if open || applied {
			return owner, open, nil
		}
		if time.Now().After(deadline) {
			return "", false, ErrNotReadable
		}
		select {
		case <-ctx.Done():
			return "", false, ErrNotReadable
		case <-s.closed:
			return "", false, ErrClosed
		case <-time.After(2 * time.Millisecond):
		}
	}
}
