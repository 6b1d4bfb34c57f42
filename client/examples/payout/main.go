// Command payout pays one payout batch in PostgreSQL under a lockd lock, and
// fences its write with the lock's token, so that a worker that was paused
// past its lease cannot pay a batch that another worker has paid since.
//
//	payout -init -pg "$DSN"                           # create the tables and batch 1
//	payout -lockd 127.0.0.1:6379 -pg "$DSN" -batch 1  # pay batch 1
//
// The worker opens a session, takes the lock payouts/batch-<id> in it
// (waiting in lockd's FIFO queue while another worker holds it), reads the
// batch, and pays it in one transaction whose first statement
// claims the batch's fence row with the token (client.FencedExec). A worker
// whose token is older than the fence's is rejected and pays nothing. With
// -fence=false the claim is skipped: the negative control, in which a paused
// worker pays a batch twice.
//
// It prints one line per step (LOCKED, READY, PAID, REJECTED, …) and exits 0
// when it paid or found the batch paid, 3 when the fence rejected it, 1 on
// any other error. -gate makes it read one line from standard input between
// its last check of the lock and its write: the place where a pause (GC, a
// stopped VM) hurts, and where only the fence helps; the test stops the
// process there with SIGSTOP.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	_ "github.com/lib/pq" // the PostgreSQL driver for database/sql
	"github.com/lockd/lockd/client"
	"github.com/redis/go-redis/v9"
)

// Schema is the example's tables: batches to pay, the payments made, and one
// fence row per fenced resource holding the highest token that wrote to it.
const Schema = `
CREATE TABLE IF NOT EXISTS payout_batches (
	id           bigint PRIMARY KEY,
	amount_cents bigint NOT NULL,
	status       text   NOT NULL DEFAULT 'pending'
);
CREATE TABLE IF NOT EXISTS payments (
	id           bigserial PRIMARY KEY,
	batch_id     bigint NOT NULL REFERENCES payout_batches (id),
	worker       text   NOT NULL,
	token        bigint NOT NULL,
	amount_cents bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS fences (
	resource text   PRIMARY KEY,
	token    bigint NOT NULL
);`

// claimFence claims the fence of $1 for token $2: it inserts or raises the
// fence row, and touches no row when the fence already holds a newer token.
const claimFence = `INSERT INTO fences (resource, token) VALUES ($1, $2)
ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
WHERE fences.token <= EXCLUDED.token`

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1
	exitRejected = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole worker (the test runs it as a separate process).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("payout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lockdAddr := fs.String("lockd", "127.0.0.1:6379", "lockd's RESP address")
	dsn := fs.String("pg", "", "PostgreSQL connection string (lib/pq)")
	batch := fs.Int64("batch", 1, "the batch to pay")
	name := fs.String("name", "worker", "this worker's name")
	fence := fs.Bool("fence", true, "fence the payment with the lock's token (false: the negative control)")
	gate := fs.Bool("gate", false, "read a line from stdin between the last check of the lock and the write")
	sessionTTL := fs.Duration("session-ttl", 5*time.Second, "session TTL")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait in the lock's FIFO queue")
	initDB := fs.Bool("init", false, "create the tables and a pending batch -batch of 100.00, then exit")
	if err := fs.Parse(args); err != nil {
		return exitFailed
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, *name+": "+format+"\n", a...) }
	ctx := context.Background()

	db, err := sql.Open("postgres", *dsn)
	if err != nil {
		say("ERROR %v", err)
		return exitFailed
	}
	defer db.Close()
	if *initDB {
		if err := Setup(ctx, db, *batch, 10000); err != nil {
			say("ERROR %v", err)
			return exitFailed
		}
		say("INITIALISED batch %d", *batch)
		return exitOK
	}

	rc := redis.NewClient(&redis.Options{Addr: *lockdAddr})
	defer rc.Close()
	locker := client.New(rc)
	session, err := locker.OpenSession(ctx, client.WithSessionTTL(*sessionTTL), client.WithSessionName(*name))
	if err != nil {
		say("ERROR %v", err)
		return exitFailed
	}
	defer session.Close(ctx)
	resource := fmt.Sprintf("payouts/batch-%d", *batch)
	lock, err := locker.Acquire(ctx, resource, client.WithSession(session), client.WithOwner(*name), client.WithWait(*wait))
	if err != nil {
		say("NOT-LOCKED %v", err)
		return exitFailed
	}
	token, _ := lock.Token()
	say("LOCKED token=%d", token)

	var status string
	var amount int64
	if err := db.QueryRowContext(ctx, `SELECT status, amount_cents FROM payout_batches WHERE id = $1`, *batch).Scan(&status, &amount); err != nil {
		say("ERROR %v", err)
		return exitFailed
	}
	if status != "pending" {
		say("ALREADY-PAID")
		lock.Release(ctx)
		return exitOK
	}
	// The last check of the lock before the write.
	if err := lock.Err(); err != nil {
		say("STOPPED %v", err)
		return exitFailed
	}
	say("READY token=%d", token)
	if *gate {
		bufio.NewReader(stdin).ReadString('\n')
		// After a pause here the local deadline may have passed; a real
		// worker could not notice in time. The fence decides.
		say("RESUMED lock-lost-locally=%v", lock.Err() != nil)
	}

	err = pay(ctx, db, resource, *batch, amount, *name, token, *fence)
	switch {
	case errors.Is(err, client.ErrStaleToken):
		say("REJECTED token=%d: %v", token, err)
		return exitRejected
	case err != nil:
		say("ERROR %v", err)
		return exitFailed
	}
	say("PAID token=%d", token)
	if err := lock.Release(ctx); err != nil {
		say("RELEASE %v", err)
	}
	return exitOK
}

// Setup creates the tables and a pending batch.
func Setup(ctx context.Context, db *sql.DB, batch, amountCents int64) error {
	if _, err := db.ExecContext(ctx, Schema); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `INSERT INTO payout_batches (id, amount_cents) VALUES ($1, $2) ON CONFLICT DO NOTHING`, batch, amountCents)
	return err
}

// pay pays the batch in one transaction. With fence, its first statement
// claims the batch's fence for token (client.ErrStaleToken when a newer
// token has written): the claim holds the fence row's lock until the
// transaction ends, so an older token can never write after a newer one.
func pay(ctx context.Context, db *sql.DB, resource string, batch, amount int64, worker string, token int64, fence bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if fence {
		if _, err := client.FencedExec(ctx, tx, claimFence, resource, token); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments (batch_id, worker, token, amount_cents) VALUES ($1, $2, $3, $4)`,
		batch, worker, token, amount); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE payout_batches SET status = 'paid' WHERE id = $1`, batch); err != nil {
		return err
	}
	return tx.Commit()
}
