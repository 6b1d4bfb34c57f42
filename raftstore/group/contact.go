package group

import (
	"math/rand/v2"
	"time"

	"github.com/hashicorp/raft"
)

// Noticing a silent leader within one heartbeat timeout. hashicorp/raft's
// follower checks for a silent leader when a timer of random length
// [heartbeatTimeout, 2×heartbeatTimeout) fires, restarted at each firing, not
// at each heartbeat: a leader that falls silent just after a check is noticed
// up to three heartbeat timeouts later (1.5 s here). And a follower that still
// sees the old leader refuses the first candidate's pre-vote ("we have a
// leader"), so the election ends only when the last follower of a majority
// has noticed. Together that held writes off for 1.6–1.8 s after a leader was
// paused (make chaos, pause-leader), against the 1.5 s bound of one election
// timeout plus 1 s.
//
// watchContact samples the same condition hashicorp/raft checks (no contact
// from the leader for a heartbeat timeout) every few milliseconds instead, and
// when it holds makes the follower run its own check at once (pokeFollower).
// The rule that decides is hashicorp/raft's, unchanged; only the moment it is
// looked at moves. Each node adds a random delay of up to half a heartbeat
// timeout, drawn anew at each poke, so that two followers seldom stand in the
// same millisecond and split the vote; pre-vote still stops a follower that
// alone lost contact from disturbing a healthy leader.

// heartbeatTimeout is hashicorp/raft's HeartbeatTimeout and ElectionTimeout:
// a follower that heard nothing from its leader for this long stands for
// election. A single voter elects itself after one: kept short so that a
// restart serves again quickly.
const heartbeatTimeout = 500 * time.Millisecond

// contactJitter is the largest random delay added to a heartbeat timeout
// before a silent leader is acted upon.
const contactJitter = heartbeatTimeout / 2

// contactPoll is the longest time watchContact sleeps between looks while this
// node is a follower with a leader.
const contactPoll = 20 * time.Millisecond

// watchContact runs until Close (s.wg counts it).
func (s *Store) watchContact() {
	defer s.wg.Done()
	jitter := rand.N(contactJitter)
	for {
		wait := contactPoll
		if s.raft.State() == raft.Follower && s.leaderAddr() != "" {
			silent := time.Since(s.raft.LastContact())
			if silent >= heartbeatTimeout+jitter {
				s.pokeFollower()
				jitter = rand.N(contactJitter)
				wait = heartbeatTimeout // its check runs now; look again after the election
			} else {
				wait = min(contactPoll, heartbeatTimeout+jitter-silent)
			}
		}
		select {
		case <-s.closed:
			return
		case <-time.After(wait):
		}
	}
}

// pokeFollower makes the follower check for a silent leader now
// (consensus.PokeFollower).
func (s *Store) pokeFollower() {
	if err := s.raft.PokeFollower(); err != nil {
		s.log.Warn("poking the follower's heartbeat check failed", "err", err)
		return
	}
	s.metrics.contactPokes.Add(1)
}
