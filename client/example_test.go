package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/redis/go-redis/v9"
)

// Acquire a lock, work while it is held, and pass its fencing token to the
// resource. (lockdAddr is lockd's RESP address: 127.0.0.1:6379 for `make run`.)
func ExampleLocker_Acquire() {
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: lockdAddr})
	defer rc.Close()
	locker := client.New(rc)

	lock, err := locker.Acquire(ctx, "example:payouts:48213", client.WithTTL(15*time.Second))
	if err != nil {
		fmt.Println("not acquired:", err)
		return
	}
	token, _ := lock.Token()
	fmt.Println("held with a token:", token > 0)

	// Anyone else is refused while it is held.
	_, err = locker.Acquire(ctx, "example:payouts:48213")
	fmt.Println("second acquire:", errors.Is(err, client.ErrNotObtained))

	// Work under lock.Context(): it is cancelled at the local deadline
	// (12 s after the acquire was sent, unless extended).
	select {
	case <-lock.Context().Done():
		fmt.Println("stop: the lock is lost")
	default:
		fmt.Println("working, time left > 10s:", lock.Remaining() > 10*time.Second)
	}
	fmt.Println("released:", lock.Release(ctx) == nil)

	next, _ := locker.Acquire(ctx, "example:payouts:48213")
	nextToken, _ := next.Token()
	fmt.Println("the next holder's token is larger:", nextToken > token)
	next.Release(ctx)
	// Output:
	// held with a token: true
	// second acquire: true
	// working, time left > 10s: true
	// released: true
	// the next holder's token is larger: true
}

// A session holds locks as long as its keepalives are acknowledged; closing it
// releases them all.
func ExampleLocker_OpenSession() {
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: lockdAddr})
	defer rc.Close()
	locker := client.New(rc)

	session, err := locker.OpenSession(ctx, client.WithSessionTTL(15*time.Second), client.WithSessionName("payout-worker-17"))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := locker.Acquire(ctx, "example:merchant-1", client.WithSession(session))
	b, _ := locker.Acquire(ctx, "example:merchant-2", client.WithSession(session))
	fmt.Println("both held:", a.Err() == nil && b.Err() == nil)

	session.Close(ctx)
	<-a.Context().Done()
	fmt.Println("after Close:", errors.Is(context.Cause(b.Context()), client.ErrSessionExpired))
	info, _ := locker.Info(ctx, "example:merchant-1")
	fmt.Println("free on the server:", info == nil)
	// Output:
	// both held: true
	// after Close: true
	// free on the server: true
}

// Extend a lease before its local deadline, for work that takes longer than
// one TTL.
func ExampleLock_Extend() {
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: lockdAddr})
	defer rc.Close()
	locker := client.New(rc)

	lock, err := locker.Acquire(ctx, "example:report", client.WithTTL(5*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Release(ctx)
	for step := 1; step <= 3; step++ {
		// … a step of the work, shorter than the time left …
		if err := lock.Extend(ctx, 0); err != nil {
			fmt.Println("stop:", err) // ErrLockLost: someone else may hold it now
			return
		}
	}
	fmt.Println("still held, time left > 2s:", lock.Remaining() > 2*time.Second)
	// Output:
	// still held, time left > 2s: true
}
