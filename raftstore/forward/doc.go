// Package forward is the pipelined request/response RPC over a net.Conn by which a follower sends payloads (batches of client requests) to its leader over the peer port and gets the leader's replies back.
//
// A caller that gives up on a request (its ctx ends after the request was
// written) gets ErrUnknown. With Client.Call the server's handler goes on
// until it returns or the connection closes. With Client.CallCancelable the
// client also sends a cancel frame (wire type 4), and the server ends that
// handler's ctx with cause ErrCanceledByCaller, so that a blocking handler
// (a waiter for a lock or a list) withdraws instead of doing work nobody
// will hear of. Servers that predate cancel frames close the connection on
// one: call CallCancelable only for peers known to run a server that
// understands them (during a rolling upgrade, use Call until every peer does).
package forward
