package scheduler

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// redisStore is NewRedisStore, failing t on error.
func redisStore(t testing.TB, c redis.UniversalClient, opts ...StoreOption) *Store {
	t.Helper()
	st, err := NewRedisStore(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// redlockStore is NewRedlockStore, failing t on error.
func redlockStore(t testing.TB, cs []redis.UniversalClient, opts ...StoreOption) *Store {
	t.Helper()
	st, err := NewRedlockStore(cs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// controlOf returns the controls of the Redis store behind c.
func controlOf(c redis.UniversalClient, opts ...StoreOption) (*Control, error) {
	st, err := NewRedisStore(c, opts...)
	if err != nil {
		return nil, err
	}
	return st.Control(), nil
}
