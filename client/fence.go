package client

import (
	"context"
	"database/sql"
	"fmt"
)

// Execer runs a statement: *sql.DB, *sql.Tx and *sql.Conn are Execers.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// FencedExec runs a fenced statement — one whose WHERE clause admits only the
// holder's token or a newer one — and answers ErrStaleToken when it changed
// no row: a holder with a newer token has written since, so the caller must
// roll back and stop. Any other error is the database's.
//
// The pattern: the resource keeps the highest token that wrote to it, and
// every write first claims it in the same transaction, before the effects:
//
//	CREATE TABLE fences (resource text PRIMARY KEY, token bigint NOT NULL);
//
//	tx, _ := db.BeginTx(ctx, nil)
//	_, err := client.FencedExec(ctx, tx,
//		`INSERT INTO fences (resource, token) VALUES ($1, $2)
//		 ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
//		 WHERE fences.token <= EXCLUDED.token`, "payouts/batch-7", token)
//	if err != nil { tx.Rollback(); return err } // ErrStaleToken: stop
//	// … the writes the lock protects …
//	return tx.Commit()
//
// (or, with the row created beforehand,
// UPDATE fences SET token = $1 WHERE resource = $2 AND token <= $1). The claim
// takes the fence row's write lock until the transaction ends, so a stale
// holder either commits before the newer one writes or is rejected; it can
// never write after it. Equal tokens pass, so one holder may write many times.
func FencedExec(ctx context.Context, db Execer, query string, args ...any) (sql.Result, error) {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("client: fenced statement: %w", err)
	}
	if n == 0 {
		return res, ErrStaleToken
	}
	return res, nil
}
