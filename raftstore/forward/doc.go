// Package forward is the pipelined request/response RPC over a net.Conn by which a follower sends payloads (batches of client requests) to its leader over the peer port and gets the leader's replies back.
package forward
