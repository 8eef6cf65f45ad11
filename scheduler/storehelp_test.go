package scheduler_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/solocron/solocron/scheduler"
)

// redisStore is scheduler.NewRedisStore, failing t on error.
func redisStore(t testing.TB, c redis.UniversalClient, opts ...scheduler.StoreOption) *scheduler.Store {
	t.Helper()
	st, err := scheduler.NewRedisStore(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// redlockStore is scheduler.NewRedlockStore, failing t on error.
func redlockStore(t testing.TB, cs []redis.UniversalClient, opts ...scheduler.StoreOption) *scheduler.Store {
	t.Helper()
	st, err := scheduler.NewRedlockStore(cs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// controlOf returns the controls of the Redis store behind c.
func controlOf(c redis.UniversalClient, opts ...scheduler.StoreOption) (*scheduler.Control, error) {
	st, err := scheduler.NewRedisStore(c, opts...)
	if err != nil {
		return nil, err
	}
	return st.Control(), nil
}

// redlockControlOf returns the controls of the Redlock store behind cs.
func redlockControlOf(cs []redis.UniversalClient, opts ...scheduler.StoreOption) (*scheduler.Control, error) {
	st, err := scheduler.NewRedlockStore(cs, opts...)
	if err != nil {
		return nil, err
	}
	return st.Control(), nil
}
