// Package schedtest helps tests outside package scheduler make its stores.
package schedtest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/scheduler"
)

// RedisStore is scheduler.NewRedisStore, failing t on error.
func RedisStore(t testing.TB, c redis.UniversalClient, opts ...scheduler.StoreOption) *scheduler.Store {
	t.Helper()
	st, err := scheduler.NewRedisStore(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// RedlockStore is scheduler.NewRedlockStore, failing t on error.
func RedlockStore(t testing.TB, cs []redis.UniversalClient, opts ...scheduler.StoreOption) *scheduler.Store {
	t.Helper()
	st, err := scheduler.NewRedlockStore(cs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
